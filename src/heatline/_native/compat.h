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
 *   HL_FRAMES_CURRENT   3.13+: tstate->current_frame, f_executable, instr_ptr.
 * Line tables: lnotab (3.9), linetable (3.10), location table (3.11+); see linetable.h.
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
    int owner_cstack;               /* owner value of C-stack shim frames, or -1 */

    size_t object_type;             /* offsetof(PyObject, ob_type) */

    /* PyCodeObject */
    size_t code_read_size;
    uintptr_t code_type;            /* &PyCode_Type */
    size_t code_filename, code_name, code_qualname; /* qualname == name before 3.11 */
    size_t code_firstlineno;
    size_t code_linetable;          /* co_lnotab on 3.9 */
    size_t code_code;               /* OBJECTS: co_code (a bytes object) */
    size_t code_adaptive;           /* 3.11+: offset of the first code unit */
    size_t code_size;               /* 3.11+: ob_size, in code units */

    /* PyBytesObject */
    size_t bytes_size, bytes_data;
} hl_layout;

/* Fills the table for the running interpreter. Must be called with the GIL held. */
void hl_compat_init(hl_layout *layout);

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

/* The sampler thread, after Py_AddPendingCall: make the main thread notice its pending calls
 * soon (3.9-3.12 need a nudge; see compat.c). */
void hl_compat_notice_pending_calls(void);

#endif
