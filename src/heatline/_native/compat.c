/* compat.c: fills the layout table of compat.h from CPython's own struct definitions, and
 * holds the tables of every version for reading another process (heatline dump).
 *
 * This is the only file built with Py_BUILD_CORE, which exposes CPython's internal headers
 * (the _PyInterpreterFrame and GIL structs are not public). It computes offsets and reads the
 * GIL's state; it calls no internal function, so it links against the public ABI only.
 */
#define Py_BUILD_CORE 1
#include <stddef.h>

#include <Python.h>
#include <frameobject.h>

#if PY_VERSION_HEX >= 0x030B0000
#include "internal/pycore_frame.h"
#endif
#if PY_VERSION_HEX >= 0x030E0000
/* 3.14+'s inline functions there leave parameters unused, which -Wextra reports. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "internal/pycore_debug_offsets.h"
#include "internal/pycore_stackref.h"
#pragma GCC diagnostic pop
#endif
#include "internal/pycore_interp.h"
#include "internal/pycore_runtime.h"
#if PY_VERSION_HEX >= 0x030B0000
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "internal/pycore_dict.h"
#pragma GCC diagnostic pop
#endif

#include "compat.h"

#include <string.h>

#if PY_VERSION_HEX < 0x03090000
#error "heatline needs CPython 3.9 or newer"
#endif
#ifdef Py_GIL_DISABLED
#error "heatline does not support free-threaded CPython (see setup.py)"
#endif

void hl_compat_init(hl_layout *l) {
    memset(l, 0, sizeof(*l));
    l->interp = (uintptr_t)PyInterpreterState_Main();
    l->tstate_next = offsetof(PyThreadState, next);
    l->tstate_thread_id = offsetof(PyThreadState, thread_id);
#if PY_VERSION_HEX >= 0x030B0000
    l->tstate_native_thread_id = offsetof(PyThreadState, native_thread_id);
    l->has_native_thread_id = 1;
#endif
    l->object_type = offsetof(PyObject, ob_type);
    l->code_type = (uintptr_t)&PyCode_Type;
    l->none_object = (uintptr_t)Py_None;
    l->code_filename = offsetof(PyCodeObject, co_filename);
    l->code_name = offsetof(PyCodeObject, co_name);
    l->code_firstlineno = offsetof(PyCodeObject, co_firstlineno);
    l->bytes_type = (uintptr_t)&PyBytes_Type;
    l->bytes_size = offsetof(PyVarObject, ob_size);
    l->bytes_data = offsetof(PyBytesObject, ob_sval);
    l->str_type = (uintptr_t)&PyUnicode_Type;
    l->str_state = offsetof(PyASCIIObject, state);
    l->str_length = offsetof(PyASCIIObject, length);
    l->str_ascii_size = sizeof(PyASCIIObject);
    l->str_compact_size = sizeof(PyCompactUnicodeObject);
    l->owner_interpreter = -1;

#if PY_VERSION_HEX < 0x030B0000
    /* 3.9, 3.10: PyFrameObject chain. */
    l->frame_model = HL_FRAMES_OBJECTS;
    l->interp_threads_head = offsetof(PyInterpreterState, tstate_head);
    l->tstate_frame = offsetof(PyThreadState, frame);
    l->frame_previous = offsetof(PyFrameObject, f_back);
    l->frame_code = offsetof(PyFrameObject, f_code);
    l->frame_instr = offsetof(PyFrameObject, f_lasti);
    l->frame_read_size = offsetof(PyFrameObject, f_lasti) + sizeof(int);
    l->code_qualname = l->code_name;
    l->code_code = offsetof(PyCodeObject, co_code);
    l->code_read_size = sizeof(PyCodeObject);
#if PY_VERSION_HEX < 0x030A0000
    l->linetable_format = HL_LNOTAB_39;
    l->code_linetable = offsetof(PyCodeObject, co_lnotab);
#else
    l->linetable_format = HL_LINETABLE_310;
    l->code_linetable = offsetof(PyCodeObject, co_linetable);
#endif
#else
    /* 3.11+: _PyInterpreterFrame chain. */
    l->linetable_format = HL_LOCATIONS_311;
    l->interp_threads_head = offsetof(PyInterpreterState, threads.head);
    l->frame_previous = offsetof(_PyInterpreterFrame, previous);
    l->frame_owner = offsetof(_PyInterpreterFrame, owner);
    l->frame_read_size = offsetof(_PyInterpreterFrame, owner) + sizeof(char);
    l->code_qualname = offsetof(PyCodeObject, co_qualname);
    l->code_linetable = offsetof(PyCodeObject, co_linetable);
    l->code_adaptive = offsetof(PyCodeObject, co_code_adaptive);
    l->code_size = offsetof(PyVarObject, ob_size);
    l->code_read_size = offsetof(PyCodeObject, co_code_adaptive);
#if PY_VERSION_HEX < 0x030D0000
    l->frame_model = HL_FRAMES_CFRAME;
    l->tstate_frame = offsetof(PyThreadState, cframe);
    l->cframe_current_frame = offsetof(_PyCFrame, current_frame);
    l->frame_code = offsetof(_PyInterpreterFrame, f_code);
    l->frame_instr = offsetof(_PyInterpreterFrame, prev_instr);
#else
    l->frame_model = HL_FRAMES_CURRENT;
    l->tstate_frame = offsetof(PyThreadState, current_frame);
    l->frame_code = offsetof(_PyInterpreterFrame, f_executable);
    l->frame_instr = offsetof(_PyInterpreterFrame, instr_ptr);
#endif
#if PY_VERSION_HEX >= 0x030E0000
    /* Entry frames and shims: FRAME_OWNED_BY_INTERPRETER, and on 3.14 FRAME_OWNED_BY_CSTACK
     * after it (pycore_interpframe.h counts a frame whose owner is either as incomplete). */
    l->owner_interpreter = FRAME_OWNED_BY_INTERPRETER;
    l->code_tag_bits = Py_TAG_BITS;
#elif PY_VERSION_HEX >= 0x030C0000
    l->owner_interpreter = FRAME_OWNED_BY_CSTACK;
#endif
#endif
}

uintptr_t hl_compat_gil_holder(void) {
#if PY_VERSION_HEX < 0x030C0000
    struct _gil_runtime_state *gil = &_PyRuntime.ceval.gil;
#else
    struct _gil_runtime_state *gil = PyInterpreterState_Main()->ceval.gil;
    if (gil == NULL) return 0;
#endif
    /* The fields are atomics inside CPython; read them as such. */
    int locked = __atomic_load_n((int *)&gil->locked, __ATOMIC_RELAXED);
    if (!locked) return 0;
    return __atomic_load_n((uintptr_t *)&gil->last_holder, __ATOMIC_RELAXED);
}

int hl_compat_fork_counts_threads_after_hooks(void) {
    return PY_VERSION_HEX >= 0x030D0000;
}

int hl_compat_python_depth(void) {
    int depth = 0;
    PyFrameObject *frame = PyEval_GetFrame(); /* borrowed */
    Py_XINCREF(frame);
    while (frame != NULL && depth < 100000) {
        PyFrameObject *back = PyFrame_GetBack(frame); /* a new reference */
        Py_DECREF(frame);
        frame = back;
        depth++;
    }
    Py_XDECREF(frame);
    return depth;
}

/* The calling thread's Python frame chain and recursion count, as python has them when it runs
 * the main module: no frame below (3.15+: the thread's base frame, the chain's last one), and
 * a recursion count of none. */
typedef struct fresh_stack {
#if PY_VERSION_HEX < 0x030B0000
    PyFrameObject *frame;
    int depth;
#else
    _PyInterpreterFrame *frame;
    int remaining;
#endif
} fresh_stack;

static fresh_stack swap_stack(PyThreadState *tstate, fresh_stack with) {
    fresh_stack was;
#if PY_VERSION_HEX < 0x030B0000
    was.frame = tstate->frame;
    was.depth = tstate->recursion_depth;
    tstate->frame = with.frame;
    tstate->recursion_depth = with.depth;
#elif PY_VERSION_HEX < 0x030C0000
    was.frame = tstate->cframe->current_frame;
    was.remaining = tstate->recursion_remaining;
    tstate->cframe->current_frame = with.frame;
    tstate->recursion_remaining = with.remaining;
#elif PY_VERSION_HEX < 0x030D0000
    was.frame = tstate->cframe->current_frame;
    was.remaining = tstate->py_recursion_remaining;
    tstate->cframe->current_frame = with.frame;
    tstate->py_recursion_remaining = with.remaining;
#else
    was.frame = tstate->current_frame;
    was.remaining = tstate->py_recursion_remaining;
    tstate->current_frame = with.frame;
    tstate->py_recursion_remaining = with.remaining;
#endif
    return was;
}

void *hl_compat_on_fresh_stack(void *(*run)(void *), void *context) {
    PyThreadState *tstate = PyThreadState_Get();
    fresh_stack fresh;
#if PY_VERSION_HEX < 0x030B0000
    fresh.frame = NULL;
    fresh.depth = 0;
#else
    fresh.frame = NULL;
#if PY_VERSION_HEX >= 0x030F0000
    /* 3.15+ ends every thread's chain at a base frame of its own, never at NULL. */
    _PyInterpreterFrame *frame = tstate->current_frame;
    while (frame != NULL && frame->previous != NULL) frame = frame->previous;
    fresh.frame = frame;
#endif
#if PY_VERSION_HEX < 0x030C0000
    fresh.remaining = tstate->recursion_limit;
#else
    fresh.remaining = tstate->py_recursion_limit;
#endif
#endif
    fresh_stack was = swap_stack(tstate, fresh);
    void *result = run(context);
    swap_stack(tstate, was);
    return result;
}

void hl_compat_enter_tracing(void) {
    PyThreadState *tstate = PyThreadState_Get();
#if PY_VERSION_HEX >= 0x030B0000
    PyThreadState_EnterTracing(tstate);
#else
    /* What 3.11's PyThreadState_EnterTracing does (and 3.9/3.10 around a trace function). */
    tstate->tracing++;
#if PY_VERSION_HEX >= 0x030A0000
    tstate->cframe->use_tracing = 0;
#else
    tstate->use_tracing = 0;
#endif
#endif
}

void hl_compat_leave_tracing(void) {
    PyThreadState *tstate = PyThreadState_Get();
#if PY_VERSION_HEX >= 0x030B0000
    PyThreadState_LeaveTracing(tstate);
#else
    int use_tracing = tstate->c_tracefunc != NULL || tstate->c_profilefunc != NULL;
    tstate->tracing--;
#if PY_VERSION_HEX >= 0x030A0000
    tstate->cframe->use_tracing = use_tracing;
#else
    tstate->use_tracing = use_tracing;
#endif
#endif
}

void hl_compat_notice_pending_calls(void) {
#if PY_VERSION_HEX < 0x030D0000
    /* Before 3.13, Py_AddPendingCall computes the eval breaker for the calling thread, which
     * is never the main thread here, so a main thread that keeps the GIL (a busy loop) would
     * not look at its pending calls. Setting the breaker makes the thread holding the GIL look
     * now: the main thread runs the call; another thread recomputes the breaker, and the
     * sampler sets it again at its next wake-up while the call is still pending. */
    __atomic_store_n((int *)&PyInterpreterState_Main()->ceval.eval_breaker, 1, __ATOMIC_RELAXED);
#endif
}

uintptr_t hl_compat_suspended_frame(void *generator) {
    PyObject *object = generator;
    if (object == NULL || (!PyGen_Check(object) && !PyCoro_CheckExact(object))) return 0;
    /* A coroutine is laid out as a generator (both are _PyGenObject_HEAD, prefixes aside). */
    PyGenObject *gen = (PyGenObject *)object;
#if PY_VERSION_HEX < 0x030A0000
    PyFrameObject *frame = gen->gi_frame;
    return frame != NULL && !gen->gi_running && frame->f_lasti >= 0 ? (uintptr_t)frame : 0;
#elif PY_VERSION_HEX < 0x030B0000
    PyFrameObject *frame = gen->gi_frame;
    return frame != NULL && frame->f_state == FRAME_SUSPENDED ? (uintptr_t)frame : 0;
#elif PY_VERSION_HEX < 0x030D0000
    return gen->gi_frame_state == FRAME_SUSPENDED ? (uintptr_t)gen->gi_iframe : 0;
#elif PY_VERSION_HEX < 0x030E0000
    return FRAME_STATE_SUSPENDED(gen->gi_frame_state) ? (uintptr_t)gen->gi_iframe : 0;
#else
    return FRAME_STATE_SUSPENDED(gen->gi_frame_state) ? (uintptr_t)&gen->gi_iframe : 0;
#endif
}

void *hl_compat_weakref_target(void *reference) {
    PyObject *ref = reference;
    if (ref == NULL || !PyWeakref_Check(ref)) return NULL;
#if PY_VERSION_HEX >= 0x030D0000
    PyObject *target = NULL;
    if (PyWeakref_GetRef(ref, &target) <= 0) { /* dead (0), or not a weak reference (-1) */
        PyErr_Clear();
        return NULL;
    }
    return target;
#else
    PyObject *target = PyWeakref_GetObject(ref); /* borrowed */
    if (target == NULL) {
        PyErr_Clear();
        return NULL;
    }
    if (target == Py_None) return NULL;
    Py_INCREF(target);
    return target;
#endif
}

/* ---- the tables for another process ------------------------------------------------------ */

/* Written down from each version's headers (Include/cpython/pystate.h, Include/internal/
 * pycore_interp.h, pycore_runtime.h, pycore_frame.h, pycore_gil.h, Include/cpython/code.h,
 * unicodeobject.h) as compiled for x86_64; hl_compat_remote_check holds each against the
 * headers of the version heatline runs on, so the suite run on every version checks them all.
 * CPython keeps these structs' layout within a minor version (the debug offsets of 3.13+, read
 * from the target, cover the case where it did not). */
static void common_remote(hl_remote_layout *r) {
    hl_layout *l = &r->walk;
    memset(r, 0, sizeof(*r));
    l->tstate_next = 8;
    r->tstate_interp = 16;
    l->object_type = 8;
    l->bytes_size = 16;
    l->bytes_data = 32;
    l->str_state = 32;
    l->str_length = 16;
    l->owner_interpreter = -1;
    r->cfunction_method = 16;
    r->cfunction_self = 24;
    /* _threadmodule.c's lockobject and rlockobject, alike from 3.9 to 3.13 */
    r->lock_sem = 16;
    r->lock_locked = 32;
    r->rlock_sem = 16;
    r->rlock_owner = 24;
    r->rlock_count = 32;
}

/* 3.9 and 3.10: PyFrameObject chains, the GIL in _PyRuntime; the same offsets but for f_lasti
 * and the line table. */
static void remote_39_310(hl_remote_layout *r, int minor) {
    hl_layout *l = &r->walk;
    l->frame_model = HL_FRAMES_OBJECTS;
    r->runtime_interpreters_head = 32;
    r->runtime_main_thread = 72;
    r->gil_state = 352; /* _PyRuntime.ceval.gil */
    r->gil_holder = 8;
    r->gil_interval = 0;
    r->gil_locked = 16;
    r->interp_next = 0;
    r->interp_id = 24;
    l->interp_threads_head = 8; /* tstate_head */
    l->tstate_thread_id = 176;
    l->tstate_frame = 24;
    l->frame_previous = 24; /* f_back */
    l->frame_code = 32;
    l->frame_instr = minor == 9 ? 104 : 96; /* f_lasti */
    l->frame_read_size = l->frame_instr + 4;
    l->code_filename = 104;
    l->code_name = l->code_qualname = 112;
    l->code_firstlineno = 40;
    l->code_linetable = 120; /* co_lnotab on 3.9, co_linetable on 3.10 */
    l->linetable_format = minor == 9 ? HL_LNOTAB_39 : HL_LINETABLE_310;
    l->code_code = 48;
    l->code_read_size = 176; /* sizeof(PyCodeObject) */
    r->lock_layout = 1;
    r->frame_valuestack = 64;
    r->code_stacksize = 32;
    l->str_ascii_size = 48;  /* PyASCIIObject still has wstr */
    l->str_compact_size = 72;
}

/* 3.11+: _PyInterpreterFrame chains and the location table. */
static void remote_311_315(hl_remote_layout *r, int minor) {
    hl_layout *l = &r->walk;
    l->linetable_format = HL_LOCATIONS_311;
    l->has_native_thread_id = 1;
    l->code_filename = 112;
    l->code_name = 120;
    l->code_qualname = 128;
    l->code_linetable = 136;
    l->code_size = 16; /* ob_size */
    r->lock_layout = minor <= 13;
    if (minor <= 13) r->frame_stacktop = 64;
    r->code_stacksize = minor == 11 ? 68 : 64;
    r->code_nlocalsplus = minor == 11 ? 76 : 72;
    if (minor == 11) {
        l->frame_model = HL_FRAMES_CFRAME;
        r->runtime_interpreters_head = 40;
        r->runtime_main_thread = 80;
        r->gil_state = 360; /* _PyRuntime.ceval.gil */
        r->interp_id = 48;
        l->interp_threads_head = 16;
        l->tstate_thread_id = 152;
        l->tstate_native_thread_id = 160;
        l->tstate_frame = 56; /* cframe */
        l->cframe_current_frame = 8;
        l->frame_previous = 48;
        l->frame_code = 32;  /* f_code */
        l->frame_instr = 56; /* prev_instr */
        l->frame_owner = 69;
        l->code_firstlineno = 72;
        l->code_adaptive = 184;
        l->str_ascii_size = 48;
        l->str_compact_size = 72;
    } else {
        r->gil_per_interpreter = 1;
        l->frame_previous = 8;
        l->frame_code = 0;   /* f_code on 3.12, f_executable on 3.13 */
        l->frame_instr = 56; /* prev_instr on 3.12, instr_ptr on 3.13 */
        l->frame_owner = 70;
        l->owner_interpreter = 3; /* FRAME_OWNED_BY_CSTACK */
        l->code_firstlineno = 68;
        l->str_ascii_size = 40; /* wstr is gone */
        l->str_compact_size = 56;
        if (minor == 12) {
            l->frame_model = HL_FRAMES_CFRAME;
            r->runtime_interpreters_head = 40;
            r->runtime_main_thread = 64;
            r->gil_state = 384; /* interp->ceval.gil */
            r->interp_id = 8;
            l->interp_threads_head = 72;
            l->tstate_thread_id = 136;
            l->tstate_native_thread_id = 144;
            l->tstate_frame = 56; /* cframe */
            l->cframe_current_frame = 0;
            l->code_adaptive = 192;
        } else {
            /* 3.13+: tstate->current_frame; one column per minor version from 3.13 */
            static const size_t interpreters_head[] = {632, 808, 936};
            static const size_t main_thread[] = {656, 832, 960};
            static const size_t interp_next[] = {7264, 7272, 7264};
            static const size_t interp_id[] = {7272, 7280, 7272};
            static const size_t threads_head[] = {7344, 7344, 7336};
            static const size_t thread_id[] = {152, 152, 176};
            int k = minor - 13;
            l->frame_model = HL_FRAMES_CURRENT;
            r->runtime_interpreters_head = interpreters_head[k];
            r->runtime_main_thread = main_thread[k];
            r->gil_state = 16; /* interp->ceval.gil */
            r->interp_next = interp_next[k];
            r->interp_id = interp_id[k];
            l->interp_threads_head = threads_head[k];
            l->tstate_thread_id = thread_id[k];
            l->tstate_native_thread_id = thread_id[k] + 8;
            l->tstate_frame = 72; /* current_frame */
            l->code_adaptive = minor == 13 ? 200 : 208;
            if (minor >= 14) {
                /* f_executable is a _PyStackRef; return_offset, then owner */
                l->frame_owner = 74;
                l->owner_interpreter = 3; /* FRAME_OWNED_BY_INTERPRETER */
                l->code_tag_bits = 3;   /* Py_TAG_BITS */
            }
        }
    }
    r->gil_holder = 8;
    r->gil_interval = 0;
    r->gil_locked = 16;
    l->frame_read_size = l->frame_owner + 1;
    l->code_read_size = l->code_adaptive; /* the code units follow the header */
}

/* The objects remoteobj.c reads (from Include/cpython/object.h, longintrepr.h, tupleobject.h,
 * Include/internal/pycore_dict.h, pycore_object.h, pycore_frame.h, Objects/dict-common.h on
 * 3.9 and 3.10). */
static void remote_objects(hl_object_layout *o, int minor) {
    static const size_t modules[] = {856, 856, 888, 944, 7656, 7688, 7592};
    static const size_t localsplus[] = {360, 352, 72, 72, 72, 80, 80};
    int k = minor - HL_REMOTE_MINOR_FIRST;
    o->interp_modules = modules[k];
    o->module_dict = 16;
    o->type_name = 24;
    o->type_basicsize = 32;
    o->type_flags = 168;
    o->type_dictoffset = 288;
    o->type_cached_keys = minor == 11 ? 872 : minor >= 15 ? 888 : minor >= 12 ? 880 : 0;
    o->var_size = 16;
    o->tuple_items = minor >= 14 ? 32 : 24; /* 3.14 caches the hash before the items */
    o->float_value = 16;
    o->set_used = 24;
    o->cell_ref = 16;
    o->long_model = minor >= 12 ? HL_LONG_TAG : HL_LONG_SIZE;
    o->long_digits = 24;
    o->dict_used = 16;
    o->dict_keys = 32;
    o->dict_values = 40;
    o->keys_model = minor >= 11 ? HL_KEYS_LOG2 : HL_KEYS_SIZE;
    o->keys_size = 8;
    o->keys_nentries = minor >= 11 ? 24 : 32;
    o->keys_indices = minor >= 11 ? 32 : 40;
    o->values_items = minor >= 13 ? 8 : 0;
    o->managed_dict = minor >= 13   ? HL_DICT_INLINE_313
                      : minor == 12 ? HL_DICT_OR_VALUES_312
                      : minor == 11 ? HL_DICT_OR_VALUES_311
                                    : HL_DICT_AT_OFFSET;
    o->frame_localsplus = localsplus[k];
    if (minor >= 11) {
        o->code_localsplusnames = 96;
        o->code_localspluskinds = 104;
    } else {
        o->code_nlocals = 28;
        o->code_varnames = 72;
        o->code_freevars = 80;
        o->code_cellvars = 88;
    }
    o->stackrefs = minor >= 14;
}

int hl_compat_remote_layout(int minor, hl_remote_layout *r) {
    if (minor < HL_REMOTE_MINOR_FIRST || minor > HL_REMOTE_MINOR_LAST) return -1;
    common_remote(r);
    if (minor <= 10) remote_39_310(r, minor);
    else remote_311_315(r, minor);
    remote_objects(&r->objects, minor);
    r->version = 0x03000000ul | ((unsigned long)minor << 16);
    return 0;
}

/* _Py_DebugOffsets (3.13+): a cookie, then uint64_t words, grouped by struct (runtime,
 * interpreter, thread, frame, code, object, ...). Each minor version adds words inside the
 * groups, so the index of each word read is written down per version, from its
 * pycore_debug_offsets.h (pycore_runtime.h on 3.13); hl_compat_remote_check holds the running
 * version's row against its header. X(name, member): the word's name here, its member there. */
#define DEBUG_WORDS(X)                                                                             \
    X(INTERPRETERS_HEAD, runtime_state.interpreters_head)                                          \
    X(INTERP_ID, interpreter_state.id)                                                             \
    X(INTERP_NEXT, interpreter_state.next)                                                         \
    X(THREADS_HEAD, interpreter_state.threads_head)                                                \
    X(CEVAL_GIL, interpreter_state.ceval_gil)                                                      \
    X(GIL_STATE, interpreter_state.gil_runtime_state)                                              \
    X(GIL_LOCKED, interpreter_state.gil_runtime_state_locked)                                      \
    X(GIL_HOLDER, interpreter_state.gil_runtime_state_holder)                                      \
    X(TSTATE_NEXT, thread_state.next)                                                              \
    X(TSTATE_INTERP, thread_state.interp)                                                          \
    X(CURRENT_FRAME, thread_state.current_frame)                                                   \
    X(THREAD_ID, thread_state.thread_id)                                                           \
    X(NATIVE_THREAD_ID, thread_state.native_thread_id)                                             \
    X(FRAME_PREVIOUS, interpreter_frame.previous)                                                  \
    X(FRAME_EXECUTABLE, interpreter_frame.executable)                                              \
    X(FRAME_INSTR, interpreter_frame.instr_ptr)                                                    \
    X(FRAME_OWNER, interpreter_frame.owner)                                                        \
    X(CODE_FILENAME, code_object.filename)                                                         \
    X(CODE_NAME, code_object.name)                                                                 \
    X(CODE_QUALNAME, code_object.qualname)                                                         \
    X(CODE_LINETABLE, code_object.linetable)                                                       \
    X(CODE_FIRSTLINENO, code_object.firstlineno)                                                   \
    X(CODE_ADAPTIVE, code_object.co_code_adaptive)                                                 \
    X(OB_TYPE, pyobject.ob_type)                                                                   \
    X(BYTES_SIZE, bytes_object.ob_size)                                                            \
    X(BYTES_DATA, bytes_object.ob_sval)                                                            \
    X(STR_STATE, unicode_object.state)                                                             \
    X(STR_LENGTH, unicode_object.length)                                                           \
    X(STR_ASCII_SIZE, unicode_object.asciiobject_size)                                             \
    X(IMPORTS_MODULES, interpreter_state.imports_modules)                                          \
    X(FRAME_LOCALSPLUS, interpreter_frame.localsplus)                                              \
    X(CODE_LOCALSPLUSNAMES, code_object.localsplusnames)                                           \
    X(CODE_LOCALSPLUSKINDS, code_object.localspluskinds)

#define DEBUG_WORD_ENUM(name, member) DO_##name,
enum { DEBUG_WORDS(DEBUG_WORD_ENUM) DO_COUNT };
#undef DEBUG_WORD_ENUM

/* The version and free_threaded words follow the cookie in every version. */
enum { DO_VERSION = 1, DO_FREE_THREADED = 2 };

typedef struct debug_shape {
    unsigned words;                /* sizeof(_Py_DebugOffsets) / 8 */
    uint8_t at[DO_COUNT];          /* in DEBUG_WORDS' order */
    uint8_t str_compact_size;      /* unicode_object.compactunicodeobject_size (3.15+), or 0 */
} debug_shape;

static const debug_shape debug_shapes[] = {
    /* 3.13 */
    {73,
     {5,  7,  8,  9,  14, 15, 17, 18, 21, 22, 23, 24, 25, 29, 30, 31, 33,
      35, 36, 37, 38, 39, 43, 45, 65, 66, 68, 69, 70, 11, 32, 41, 42},
     0},
    /* 3.14 */
    {95,
     {5,  7,  8,  9,  15, 16, 18, 19, 24, 25, 26, 27, 28, 32, 33, 34, 36,
      40, 41, 42, 43, 44, 48, 51, 75, 76, 78, 79, 80, 12, 35, 46, 47},
     0},
    /* 3.15 */
    {111,
     {5,  7,  8,  9,  15, 16, 18, 19, 24, 25, 26, 30, 31, 40, 41, 42, 44,
      48, 49, 50, 51, 52, 56, 59, 87, 88, 90, 91, 92, 12, 43, 54, 55},
     93},
};

/* The shape of 3.minor's debug offsets, or NULL before 3.13 and past the newest known. */
static const debug_shape *debug_shape_of(int minor) {
    if (minor < 13 || minor > HL_REMOTE_MINOR_LAST) return NULL;
    return &debug_shapes[minor - 13];
}

/* Offsets in the structs read are far below this; a larger word is not an offset. */
#define MAX_OFFSET (1u << 16)

int hl_compat_apply_debug_offsets(const uint8_t *bytes, hl_remote_layout *r, const char **why) {
    uint64_t w[HL_DEBUG_OFFSETS_SIZE / 8];
    memcpy(w, bytes, sizeof(w));
    if (memcmp(bytes, "xdebugpy", 8) != 0) {
        *why = "no _Py_DebugOffsets cookie at the start of _PyRuntime";
        return -1;
    }
    int minor = (int)((r->version >> 16) & 0xFF);
    const debug_shape *shape = debug_shape_of(minor);
    if (shape == NULL) {
        *why = "_Py_DebugOffsets of a version whose shape heatline does not know";
        return -1;
    }
    if ((w[DO_VERSION] >> 16) != (0x0300u | (unsigned)minor)) {
        *why = "_Py_DebugOffsets naming another version than its Py_Version";
        return -1;
    }
    if (w[DO_FREE_THREADED] != 0) {
        *why = "a free-threaded build";
        return -1;
    }
    uint64_t v[DO_COUNT];
    for (int i = 0; i < DO_COUNT; i++) {
        v[i] = w[shape->at[i]];
        if (v[i] >= MAX_OFFSET) {
            *why = "_Py_DebugOffsets holding values that are not offsets";
            return -1;
        }
    }
    if (v[DO_GIL_LOCKED] < v[DO_GIL_STATE] || v[DO_GIL_HOLDER] < v[DO_GIL_STATE]) {
        *why = "_Py_DebugOffsets with the GIL's fields outside its state";
        return -1;
    }
    hl_layout *l = &r->walk;
    r->version = (unsigned long)w[DO_VERSION];
    r->runtime_interpreters_head = v[DO_INTERPRETERS_HEAD];
    r->interp_id = v[DO_INTERP_ID];
    r->interp_next = v[DO_INTERP_NEXT];
    l->interp_threads_head = v[DO_THREADS_HEAD];
    r->gil_per_interpreter = 1;
    r->gil_state = v[DO_CEVAL_GIL];
    r->gil_locked = v[DO_GIL_LOCKED] - v[DO_GIL_STATE];
    r->gil_holder = v[DO_GIL_HOLDER] - v[DO_GIL_STATE];
    l->tstate_next = v[DO_TSTATE_NEXT];
    r->tstate_interp = v[DO_TSTATE_INTERP];
    l->frame_model = HL_FRAMES_CURRENT;
    l->tstate_frame = v[DO_CURRENT_FRAME];
    l->tstate_thread_id = v[DO_THREAD_ID];
    l->tstate_native_thread_id = v[DO_NATIVE_THREAD_ID];
    l->has_native_thread_id = 1;
    l->frame_previous = v[DO_FRAME_PREVIOUS];
    l->frame_code = v[DO_FRAME_EXECUTABLE];
    l->frame_instr = v[DO_FRAME_INSTR];
    l->frame_owner = v[DO_FRAME_OWNER];
    size_t end = l->frame_owner + 1;
    size_t fields[] = {l->frame_previous, l->frame_code, l->frame_instr};
    for (size_t i = 0; i < 3; i++)
        if (fields[i] + 8 > end) end = fields[i] + 8;
    l->frame_read_size = end;
    l->code_filename = v[DO_CODE_FILENAME];
    l->code_name = v[DO_CODE_NAME];
    l->code_qualname = v[DO_CODE_QUALNAME];
    l->code_linetable = v[DO_CODE_LINETABLE];
    l->code_firstlineno = v[DO_CODE_FIRSTLINENO];
    l->code_adaptive = v[DO_CODE_ADAPTIVE];
    l->code_read_size = l->code_adaptive;
    l->object_type = v[DO_OB_TYPE];
    l->bytes_size = v[DO_BYTES_SIZE];
    l->bytes_data = v[DO_BYTES_DATA];
    l->str_state = v[DO_STR_STATE];
    l->str_length = v[DO_STR_LENGTH];
    l->str_ascii_size = v[DO_STR_ASCII_SIZE];
    r->objects.interp_modules = v[DO_IMPORTS_MODULES];
    r->objects.frame_localsplus = v[DO_FRAME_LOCALSPLUS];
    r->objects.code_localsplusnames = v[DO_CODE_LOCALSPLUSNAMES];
    r->objects.code_localspluskinds = v[DO_CODE_LOCALSPLUSKINDS];
    if (shape->str_compact_size != 0 && w[shape->str_compact_size] < MAX_OFFSET)
        l->str_compact_size = w[shape->str_compact_size];
    else /* PyCompactUnicodeObject adds utf8_length and utf8 to PyASCIIObject (3.12+) */
        l->str_compact_size = l->str_ascii_size + 16;
    return 0;
}

/* The fields hl_compat_remote_check compares: all but the addresses, which are the process's. */
#define FIELD(name) {#name, offsetof(hl_remote_layout, name), sizeof(((hl_remote_layout *)0)->name)}
static const struct {
    const char *name;
    size_t offset, size;
} compared[] = {
    FIELD(walk.frame_model),
    FIELD(walk.linetable_format),
    FIELD(walk.interp_threads_head),
    FIELD(walk.tstate_next),
    FIELD(walk.tstate_thread_id),
    FIELD(walk.tstate_native_thread_id),
    FIELD(walk.has_native_thread_id),
    FIELD(walk.tstate_frame),
    FIELD(walk.cframe_current_frame),
    FIELD(walk.frame_read_size),
    FIELD(walk.frame_previous),
    FIELD(walk.frame_code),
    FIELD(walk.frame_instr),
    FIELD(walk.frame_owner),
    FIELD(walk.owner_interpreter),
    FIELD(walk.code_tag_bits),
    FIELD(walk.object_type),
    FIELD(walk.code_read_size),
    FIELD(walk.code_filename),
    FIELD(walk.code_name),
    FIELD(walk.code_qualname),
    FIELD(walk.code_firstlineno),
    FIELD(walk.code_linetable),
    FIELD(walk.code_code),
    FIELD(walk.code_adaptive),
    FIELD(walk.code_size),
    FIELD(walk.bytes_size),
    FIELD(walk.bytes_data),
    FIELD(walk.str_state),
    FIELD(walk.str_length),
    FIELD(walk.str_ascii_size),
    FIELD(walk.str_compact_size),
    FIELD(runtime_interpreters_head),
    FIELD(runtime_main_thread),
    FIELD(interp_next),
    FIELD(interp_id),
    FIELD(tstate_interp),
    FIELD(gil_per_interpreter),
    FIELD(gil_state),
    FIELD(gil_locked),
    FIELD(gil_holder),
    FIELD(gil_interval),
    FIELD(frame_valuestack),
    FIELD(frame_stacktop),
    FIELD(code_nlocalsplus),
    FIELD(code_stacksize),
    FIELD(cfunction_method),
    FIELD(cfunction_self),
    FIELD(objects.interp_modules),
    FIELD(objects.module_dict),
    FIELD(objects.type_name),
    FIELD(objects.type_basicsize),
    FIELD(objects.type_flags),
    FIELD(objects.type_dictoffset),
    FIELD(objects.type_cached_keys),
    FIELD(objects.var_size),
    FIELD(objects.tuple_items),
    FIELD(objects.float_value),
    FIELD(objects.set_used),
    FIELD(objects.cell_ref),
    FIELD(objects.long_model),
    FIELD(objects.long_digits),
    FIELD(objects.dict_used),
    FIELD(objects.dict_keys),
    FIELD(objects.dict_values),
    FIELD(objects.keys_model),
    FIELD(objects.keys_size),
    FIELD(objects.keys_nentries),
    FIELD(objects.keys_indices),
    FIELD(objects.values_items),
    FIELD(objects.managed_dict),
    FIELD(objects.frame_localsplus),
    FIELD(objects.code_localsplusnames),
    FIELD(objects.code_localspluskinds),
    FIELD(objects.code_nlocals),
    FIELD(objects.code_varnames),
    FIELD(objects.code_cellvars),
    FIELD(objects.code_freevars),
    FIELD(objects.stackrefs),
};
#undef FIELD

/* The running version's hl_object_layout, from its headers; what they do not define (3.9 and
 * 3.10 keep the dict keys' struct in Objects/) is taken from the table. Returns 0 or -1. */
static int objects_here(hl_object_layout *o) {
    hl_remote_layout table;
    if (hl_compat_remote_layout((PY_VERSION_HEX >> 16) & 0xFF, &table) != 0) return -1;
    *o = table.objects;
#if PY_VERSION_HEX >= 0x030C0000
    o->interp_modules = offsetof(PyInterpreterState, imports.modules);
#else
    o->interp_modules = offsetof(PyInterpreterState, modules);
#endif
    o->module_dict = sizeof(PyObject); /* PyModuleObject's first field after the header */
    o->type_name = offsetof(PyTypeObject, tp_name);
    o->type_basicsize = offsetof(PyTypeObject, tp_basicsize);
    o->type_flags = offsetof(PyTypeObject, tp_flags);
    o->type_dictoffset = offsetof(PyTypeObject, tp_dictoffset);
    o->var_size = offsetof(PyVarObject, ob_size);
    o->tuple_items = offsetof(PyTupleObject, ob_item);
    o->float_value = offsetof(PyFloatObject, ob_fval);
    o->set_used = offsetof(PySetObject, used);
    o->cell_ref = offsetof(PyCellObject, ob_ref);
    o->dict_used = offsetof(PyDictObject, ma_used);
    o->dict_keys = offsetof(PyDictObject, ma_keys);
    o->dict_values = offsetof(PyDictObject, ma_values);
#if PY_VERSION_HEX >= 0x030C0000
    o->long_digits = offsetof(PyLongObject, long_value.ob_digit);
#else
    o->long_digits = offsetof(PyLongObject, ob_digit);
#endif
#if PY_VERSION_HEX >= 0x030B0000
    o->type_cached_keys = offsetof(PyHeapTypeObject, ht_cached_keys);
    o->keys_size = offsetof(PyDictKeysObject, dk_log2_size);
    o->keys_nentries = offsetof(PyDictKeysObject, dk_nentries);
    o->keys_indices = offsetof(PyDictKeysObject, dk_indices);
    o->values_items = offsetof(PyDictValues, values);
    o->frame_localsplus = offsetof(_PyInterpreterFrame, localsplus);
    o->code_localsplusnames = offsetof(PyCodeObject, co_localsplusnames);
    o->code_localspluskinds = offsetof(PyCodeObject, co_localspluskinds);
#else
    o->frame_localsplus = offsetof(PyFrameObject, f_localsplus);
    o->code_nlocals = offsetof(PyCodeObject, co_nlocals);
    o->code_varnames = offsetof(PyCodeObject, co_varnames);
    o->code_freevars = offsetof(PyCodeObject, co_freevars);
    o->code_cellvars = offsetof(PyCodeObject, co_cellvars);
#endif
    return 0;
}

int hl_compat_remote_check(const char **field) {
    hl_remote_layout here, table;
    memset(&here, 0, sizeof(here));
    hl_compat_init(&here.walk);
    here.runtime_interpreters_head = offsetof(_PyRuntimeState, interpreters.head);
    here.runtime_main_thread = offsetof(_PyRuntimeState, main_thread);
    here.interp_next = offsetof(PyInterpreterState, next);
    here.interp_id = offsetof(PyInterpreterState, id);
    here.tstate_interp = offsetof(PyThreadState, interp);
#if PY_VERSION_HEX < 0x030C0000
    here.gil_state = offsetof(_PyRuntimeState, ceval.gil);
#else
    here.gil_per_interpreter = 1;
    here.gil_state = offsetof(PyInterpreterState, ceval.gil);
#endif
    here.gil_locked = offsetof(struct _gil_runtime_state, locked);
    here.gil_holder = offsetof(struct _gil_runtime_state, last_holder);
    here.gil_interval = offsetof(struct _gil_runtime_state, interval);
#if PY_VERSION_HEX < 0x030B0000
    here.frame_valuestack = offsetof(PyFrameObject, f_valuestack);
#else
    here.code_nlocalsplus = offsetof(PyCodeObject, co_nlocalsplus);
#if PY_VERSION_HEX < 0x030E0000
    here.frame_stacktop = offsetof(_PyInterpreterFrame, stacktop);
#endif
#endif
    here.code_stacksize = offsetof(PyCodeObject, co_stacksize);
    here.cfunction_method = offsetof(PyCFunctionObject, m_ml);
    here.cfunction_self = offsetof(PyCFunctionObject, m_self);
    if (objects_here(&here.objects) != 0) {
        *field = "objects: version";
        return 0;
    }

    *field = "version";
    if (hl_compat_remote_layout((PY_VERSION_HEX >> 16) & 0xFF, &table) != 0) return 0;
#if PY_VERSION_HEX >= 0x030D0000
    const char *why;
    *field = "debug offsets";
    const debug_shape *shape = debug_shape_of((PY_VERSION_HEX >> 16) & 0xFF);
    if (shape == NULL || shape->words != sizeof(_Py_DebugOffsets) / 8) return 0;
#define DEBUG_WORD_CHECK(name, member)                                                             \
    if (shape->at[DO_##name] != offsetof(_Py_DebugOffsets, member) / 8) {                          \
        *field = "debug offsets: " #member;                                                        \
        return 0;                                                                                  \
    }
    DEBUG_WORDS(DEBUG_WORD_CHECK)
#undef DEBUG_WORD_CHECK
#if PY_VERSION_HEX >= 0x030F0000
    if (shape->str_compact_size !=
        offsetof(_Py_DebugOffsets, unicode_object.compactunicodeobject_size) / 8) {
        *field = "debug offsets: unicode_object.compactunicodeobject_size";
        return 0;
    }
#else
    if (shape->str_compact_size != 0) return 0;
#endif
    table.version = PY_VERSION_HEX;
    if (hl_compat_apply_debug_offsets((const uint8_t *)&_PyRuntime, &table, &why) != 0) return 0;
#endif
    for (size_t i = 0; i < sizeof(compared) / sizeof(*compared); i++) {
        if (memcmp((const char *)&here + compared[i].offset,
                   (const char *)&table + compared[i].offset, compared[i].size) != 0) {
            *field = compared[i].name;
            return 0;
        }
    }
    *field = NULL;
    return 1;
}
