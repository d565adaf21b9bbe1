/* compat.c: fills the layout table of compat.h from CPython's own struct definitions.
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
#include "internal/pycore_interp.h"
#include "internal/pycore_runtime.h"

#include "compat.h"

#if PY_VERSION_HEX < 0x03090000
#error "heatline needs CPython 3.9 or newer"
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
    l->code_filename = offsetof(PyCodeObject, co_filename);
    l->code_name = offsetof(PyCodeObject, co_name);
    l->code_firstlineno = offsetof(PyCodeObject, co_firstlineno);
    l->bytes_size = offsetof(PyVarObject, ob_size);
    l->bytes_data = offsetof(PyBytesObject, ob_sval);
    l->owner_cstack = -1;

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
#if PY_VERSION_HEX >= 0x030C0000
    l->owner_cstack = FRAME_OWNED_BY_CSTACK;
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
