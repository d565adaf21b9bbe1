/* compat.h: every CPython-version difference the engine depends on, and nothing else.
 *
 * The sampler reads other threads' interpreter state with fault-tolerant reads (memread.h)
 * while those threads keep running, so it never dereferences CPython structures directly.
 * Instead it works from this table of offsets, filled once by compat.c, which is the only
 * translation unit compiled against CPython's internal headers (Py_BUILD_CORE). The offsets
 * therefore come from the real struct definitions of the CPython the extension is built for,
 * not from copies of them.
 *
 * Frame models:
 *   HL_FRAMES_OBJECTS   3.9, 3.10: tstate->frame is a PyFrameObject chain (f_back, f_code,
 *                       f_lasti; f_lasti counts bytes on 3.9 and code units on 3.10).
 *   HL_FRAMES_CFRAME    3.11, 3.12: tstate->cframe->current_frame is a _PyInterpreterFrame
 *                       chain (previous, f_code, prev_instr = the instruction executing).
 *   HL_FRAMES_CURRENT   3.13+: tstate->current_frame, f_executable, instr_ptr (3.14+: the
 *                       f_executable word is a _PyStackRef, tag bits in its low bits).
 * Line tables: lnotab (3.9), linetable (3.10), location table (3.11+); see linetable.h.
 *
 * Another process (heatline dump, remote.c) may run any of 3.9-3.15, whatever CPython heatline
 * itself runs on, so its layout cannot come from the headers heatline is built with: compat.c
 * also holds one table per minor version (hl_compat_remote_layout), written down from each
 * version's own headers on x86_64 and checked against them by the test suite on every version
 * it runs on (hl_compat_remote_check). From 3.13 the target's own _Py_DebugOffsets, which
 * CPython keeps at the start of _PyRuntime for tools like this one, overrides the table for
 * every field it describes; the table keeps the rest (the main thread's id, the GIL's switch
 * interval, where a compact str's characters start before 3.15, the owner values).
 */
#ifndef HEATLINE_COMPAT_H
#define HEATLINE_COMPAT_H

#include <stddef.h>
#include <stdint.h>

enum hl_frame_model { HL_FRAMES_OBJECTS = 1, HL_FRAMES_CFRAME = 2, HL_FRAMES_CURRENT = 3 };
enum hl_linetable_format { HL_LNOTAB_39 = 1, HL_LINETABLE_310 = 2, HL_LOCATIONS_311 = 3 };

typedef struct hl_layout {
    int frame_model;
    int linetable_format;

    /* PyInterpreterState / PyThreadState */
    uintptr_t interp;               /* the main interpreter */
    size_t interp_threads_head;     /* offset of the newest PyThreadState* */
    size_t tstate_next;
    size_t tstate_thread_id;        /* the pthread_t (as unsigned long) */
    size_t tstate_native_thread_id; /* the kernel thread id, 3.11+ */
    int has_native_thread_id;       /* 0 on 3.9/3.10: see pthread_tid_offset in sampler.c */
    size_t tstate_frame;            /* OBJECTS: frame; CFRAME: cframe; CURRENT: current_frame */
    size_t cframe_current_frame;    /* CFRAME only */

    /* one frame (a PyFrameObject prefix or a _PyInterpreterFrame prefix) */
    size_t frame_read_size;         /* bytes to read to cover every field below */
    size_t frame_previous;
    size_t frame_code;
    size_t frame_instr;             /* OBJECTS: f_lasti (int); others: instruction pointer */
    size_t frame_owner;             /* not OBJECTS: char owner */
    int owner_interpreter;          /* owner values from this one up mark the interpreter's own
                                     * frames (C-stack entry frames, shims), never the
                                     * program's; -1 before 3.12 */
    uintptr_t code_tag_bits;        /* 3.14+: the frame's code is a _PyStackRef, a pointer
                                     * whose low bits are tags; 0 before */

    size_t object_type;             /* offsetof(PyObject, ob_type) */

    /* PyCodeObject */
    size_t code_read_size;
    uintptr_t code_type;            /* &PyCode_Type */
    uintptr_t none_object;          /* &_Py_NoneStruct: what a 3.13 shim frame's code holds (0:
                                     * unknown, shims are then told by their object's type) */
    size_t code_filename, code_name, code_qualname; /* qualname == name before 3.11 */
    size_t code_firstlineno;
    size_t code_linetable;          /* co_lnotab on 3.9 */
    size_t code_code;               /* OBJECTS: co_code (a bytes object) */
    size_t code_adaptive;           /* 3.11+: offset of the first code unit */
    size_t code_size;               /* 3.11+: ob_size, in code units */

    /* PyBytesObject */
    uintptr_t bytes_type; /* &PyBytes_Type */
    size_t bytes_size, bytes_data;

    /* str (PyASCIIObject, PyCompactUnicodeObject): the walker reads compact strings only */
    uintptr_t str_type; /* &PyUnicode_Type */
    size_t str_state;   /* a 32-bit word of bit fields: kind in bits 2-4, compact 5, ascii 6 */
    size_t str_length;  /* in code points */
    size_t str_ascii_size, str_compact_size; /* where the characters start, per kind of str */
} hl_layout;

/* The str state word's bit fields (3.9-3.13 alike: interned takes the two low bits). */
#define HL_STR_KIND(state) (((state) >> 2) & 7u)
#define HL_STR_COMPACT(state) (((state) >> 5) & 1u)
#define HL_STR_ASCII(state) (((state) >> 6) & 1u)

/* Fills the table for the running interpreter. Must be called with the GIL held. */
void hl_compat_init(hl_layout *layout);

/* ---- another process's interpreter (remote.c) ------------------------------------------- */

/* The objects remoteobj.h reads in another process (a thread's name, a frame's local
 * variables): offsets in the struct each name starts with, and the models of the structs whose
 * shape changed between versions. */
enum hl_dict_keys_model {
    HL_KEYS_SIZE = 1, /* 3.9, 3.10: dk_size (a Py_ssize_t) gives the index width */
    HL_KEYS_LOG2 = 2, /* 3.11+: dk_log2_size, dk_log2_index_bytes, dk_kind (unicode entries) */
};
enum hl_managed_dict_model {
    HL_DICT_AT_OFFSET = 1, /* 3.9, 3.10: the type's tp_dictoffset locates the dict pointer */
    HL_DICT_OR_VALUES_311 = 2, /* 3.11: dict pointer at -3 words, values pointer at -4 */
    HL_DICT_OR_VALUES_312 = 3, /* 3.12: one word at -3: a dict, or values (odd: values - 1) */
    HL_DICT_INLINE_313 = 4,    /* 3.13+: dict pointer at -3 words, values inline after the
                                * object's basic size (valid while their valid byte is set) */
};
enum hl_long_model {
    HL_LONG_SIZE = 1, /* 3.9-3.11: ob_size counts the digits, its sign is the number's */
    HL_LONG_TAG = 2,  /* 3.12+: lv_tag: digits << 3 | sign (0 positive, 1 zero, 2 negative) */
};
typedef struct hl_object_layout {
    size_t interp_modules;    /* PyInterpreterState: sys.modules (a dict) */
    size_t module_dict;       /* PyModuleObject: md_dict */
    size_t type_name, type_basicsize, type_flags, type_dictoffset; /* PyTypeObject */
    size_t type_cached_keys;  /* PyHeapTypeObject: ht_cached_keys (3.11+: instances' shared
                               * dict keys) */
    size_t var_size;          /* PyVarObject: ob_size (list, tuple) */
    size_t tuple_items;
    size_t float_value;
    size_t set_used;
    size_t cell_ref;
    int long_model;           /* an hl_long_model */
    size_t long_digits;       /* 30-bit digits, in uint32_t each */
    size_t dict_used, dict_keys, dict_values; /* PyDictObject */
    int keys_model;           /* an hl_dict_keys_model */
    size_t keys_size;         /* HL_KEYS_SIZE: dk_size; HL_KEYS_LOG2: dk_log2_size (a byte) */
    size_t keys_nentries, keys_indices;
    size_t values_items;      /* where a split dict's values start in its values struct */
    int managed_dict;         /* an hl_managed_dict_model */
    size_t frame_localsplus;  /* the frame's local variables, cells and free variables */
    /* The code object's names of them: co_localsplusnames and co_localspluskinds (3.11+;
     * code_nlocals then 0), or co_nlocals, co_varnames, co_cellvars, co_freevars (3.9,
     * 3.10) */
    size_t code_localsplusnames, code_localspluskinds;
    size_t code_nlocals, code_varnames, code_cellvars, code_freevars;
    int stackrefs; /* 3.14+: a frame's slots are _PyStackRef: pointers with tag bits, or an
                    * int tagged 3 in its low bits */
} hl_object_layout;

/* What reading another process needs beyond the walker's table: where its interpreters and
 * their threads are listed and where the GIL's state is. Offsets are relative to the struct
 * each name starts with; addresses (walk.interp, walk.code_type, walk.str_type,
 * walk.bytes_type) are the target's, filled by remote.c from its symbols. */
typedef struct hl_remote_layout {
    hl_layout walk;
    unsigned long version;            /* PY_VERSION_HEX; 3.9, 3.10: major.minor only */
    size_t runtime_interpreters_head; /* _PyRuntimeState: the newest PyInterpreterState */
    size_t runtime_main_thread;       /* _PyRuntimeState: the main thread's pthread_t */
    size_t interp_next, interp_id;    /* PyInterpreterState */
    size_t tstate_interp;             /* PyThreadState: the interpreter it belongs to */
    /* The GIL's state (struct _gil_runtime_state): in _PyRuntimeState at gil_state (3.9-3.11),
     * or pointed to by the PyInterpreterState field at gil_state (3.12+: one GIL per
     * interpreter possible). gil_locked (an int), gil_holder (the PyThreadState that took it
     * last) and gil_interval (the switch interval in microseconds, an unsigned long: what
     * sys.setswitchinterval sets) are offsets in that struct. */
    int gil_per_interpreter;
    size_t gil_state, gil_locked, gil_holder, gil_interval;
    hl_object_layout objects;
    /* What heatline dump's deadlock finding reads (locks.h): each frame's locals and value
     * stack, and the lock objects they hold (a frame's slots start at objects.frame_localsplus,
     * a type's name is at objects.type_name). frame_valuestack: before 3.11, the PyFrameObject's f_valuestack (a pointer to the value
     * stack's first slot, after the locals, cells and free variables); frame_stacktop: 3.11+,
     * the int that counts a frame's live slots from localsplus while the frame calls a Python
     * function (-1 or stale in the innermost frame: then co_stacksize bounds it), 0 where the
     * version keeps no such count; code_nlocalsplus (3.11+), code_stacksize: ints of the code
     * object. cfunction_method, cfunction_self:
     * PyCFunctionObject's m_ml (whose first word is the method's name) and m_self (a bound
     * method's object: a `with lock:` keeps the lock's bound __exit__ on the value stack). The
     * lock objects are _threadmodule.c's, whose structs no header shows: measured on each
     * version (_thread.lock: lock_sem, the PyThread_type_lock whose address a blocked acquire
     * waits on in futex, and locked, a char; _thread.RLock: rlock_sem, rlock_owner (the
     * owner's thread ident, 0: none), rlock_count). lock_layout 0: not known for this version
     * (3.14+, whose locks are PyMutex-based), and no deadlock is looked for. */
    int lock_layout;
    size_t frame_valuestack, frame_stacktop;
    size_t code_nlocalsplus, code_stacksize;
    size_t cfunction_method, cfunction_self;
    size_t lock_sem, lock_locked, rlock_sem, rlock_owner, rlock_count;
} hl_remote_layout;

/* The oldest and newest minor versions of 3.x the tables describe. */
#define HL_REMOTE_MINOR_FIRST 9
#define HL_REMOTE_MINOR_LAST 15

/* Fills *r with the table of CPython 3.minor (a release build, not free-threaded, x86_64 or
 * another LP64 ABI with the same alignment). Returns 0, or -1 for a version without a table. */
int hl_compat_remote_layout(int minor, hl_remote_layout *r);

/* 3.13+: how many bytes of _Py_DebugOffsets hl_compat_apply_debug_offsets reads, from the start
 * of _PyRuntime (the largest of the shapes it knows, 3.15's; _PyRuntime is far larger). */
#define HL_DEBUG_OFFSETS_SIZE (128 * 8)

/* Checks the _Py_DebugOffsets copied from the start of a target's _PyRuntime (bytes, at least
 * HL_DEBUG_OFFSETS_SIZE of them) and overrides *r's offsets with the ones it holds; r->version
 * becomes the version it names. The struct's shape changes with the minor version: the one of
 * r->version's minor version is used, and must be the one the offsets name. Returns 0; -1 with
 * *why set ("no cookie", ...) when they are not debug offsets heatline can read: another
 * version's, a shape heatline does not know, a free-threaded build. */
int hl_compat_apply_debug_offsets(const uint8_t *bytes, hl_remote_layout *r, const char **why);

/* Test hook: whether the table of the running CPython's minor version (with this process's own
 * debug offsets applied, 3.13+) holds the offsets of its headers, and (3.13+) whether the words
 * hl_compat_apply_debug_offsets reads are where the headers' _Py_DebugOffsets has them.
 * Returns 1, or 0 with the first field that differs in *field. */
int hl_compat_remote_check(const char **field);

/* Which thread state holds the GIL right now: its address, or 0 if the GIL is free or the
 * question cannot be answered on this version. Safe to call without the GIL from any thread:
 * it reads two machine words that live in memory the interpreter never frees. */
uintptr_t hl_compat_gil_holder(void);

/* Whether os.fork() counts the process's threads (and warns when there is more than one)
 * after running the os.register_at_fork(after_in_parent=...) hooks rather than before them:
 * 3.13+. Then the sampler thread cannot be started again from that hook (see module.c). */
int hl_compat_fork_counts_threads_after_hooks(void);

/* How many Python frames the calling thread's stack holds (GIL held; frameobject.h is not
 * part of Python.h before 3.11). */
int hl_compat_python_depth(void);

/* run(context) (GIL held) with the calling thread's Python frames and recursion count set
 * aside, as python has them when it runs the main module: the frames it runs have none of the
 * caller's below them (sys._getframe(), faulthandler's tracebacks, the stacks sampled) and the
 * whole recursion limit to use. Both are put back when it returns; returns what it returned. */
void *hl_compat_on_fresh_stack(void *(*run)(void *), void *context);

/* With the GIL, around Python code heatline runs in one of the program's threads (a pending
 * call): the program's trace and profile functions (sys.settrace, sys.setprofile, and from 3.12
 * sys.monitoring's tools) do not see it, as while CPython runs a trace function. They nest
 * as CPython's own do; each enter needs its leave. */
void hl_compat_enter_tracing(void);
void hl_compat_leave_tracing(void);

/* The sampler thread, after Py_AddPendingCall: make the main thread notice its pending calls
 * soon (3.9-3.12 need a nudge; see compat.c). */
void hl_compat_notice_pending_calls(void);

/* The frame of a suspended generator or coroutine (a PyObject *, GIL held), as the walker
 * reads frames (frames.h: a PyFrameObject before 3.11, the _PyInterpreterFrame inside the
 * object from 3.11): its address, or 0 when the object is neither, or is not suspended
 * (created and not started, running, or finished). */
uintptr_t hl_compat_suspended_frame(void *generator);

/* The object a weak reference (a PyObject *, GIL held) points to, as a new reference, or NULL
 * when it is dead or not a weak reference (no exception left set). */
void *hl_compat_weakref_target(void *reference);

#endif
