/* newthreads.c: see newthreads.h. */
#include <Python.h>

#include "newthreads.h"

#include "compat.h"
#include "engine_part.h"

static PyObject *callback; /* owned; touched only with the GIL */
static int enabled;        /* callback set: read by the sampler thread */
static size_t seen;        /* the threads the sampler had seen at the last tick */
static size_t handled;     /* ... when the callback last started */
static int requested;      /* a pending call is queued and has not run yet */
static int again;          /* the callback asked to be called at the next tick too */

void hl_newthreads_set(PyObject *new_callback) {
    HL_ASSERT(PyGILState_Check());
    PyObject *old = callback;
    callback = NULL;
    __atomic_store_n(&enabled, 0, __ATOMIC_RELAXED);
    if (new_callback != NULL && new_callback != Py_None) {
        Py_INCREF(new_callback);
        callback = new_callback;
        __atomic_store_n(&handled, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&again, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&enabled, 1, __ATOMIC_RELAXED);
    }
    Py_XDECREF(old);
}

/* In the main thread, with the GIL. The engine is not paused: the read takes microseconds
 * (no I/O, no lock), while a pause that a tick fell in would drop that tick's whole interval for
 * every thread; a tick meanwhile charges the main thread's line as at any moment (the read's
 * frames are heatline's, never user code). Its allocations are not sampled (hl_engine_enter),
 * and the program's trace and profile functions do not see it (hl_compat_enter_tracing).
 * An exception the callback lets through (one raised by the program's own signal handlers
 * while it ran) is raised in the program there, as it would have been. */
static int run(void *unused) {
    (void)unused;
    int result = 0;
    PyObject *function = callback;
    if (function != NULL) {
        __atomic_store_n(&handled, __atomic_load_n(&seen, __ATOMIC_RELAXED), __ATOMIC_RELAXED);
        Py_INCREF(function);
        hl_engine_enter();
        hl_compat_enter_tracing(); /* the program's trace and profile functions see none of it */
        PyObject *value = PyObject_CallObject(function, NULL);
        hl_compat_leave_tracing();
        hl_engine_leave();
        Py_DECREF(function);
        if (value == NULL) result = -1;
        __atomic_store_n(&again, value != NULL && PyObject_IsTrue(value) == 1, __ATOMIC_RELAXED);
        Py_XDECREF(value);
    }
    __atomic_store_n(&requested, 0, __ATOMIC_RELEASE);
    return result;
}

static void tick(uint64_t now) {
    (void)now;
    if (!__atomic_load_n(&enabled, __ATOMIC_RELAXED)) return;
    size_t threads = hl_engine_threads_seen_locked();
    __atomic_store_n(&seen, threads, __ATOMIC_RELAXED);
    if (threads != __atomic_load_n(&handled, __ATOMIC_RELAXED) ||
        __atomic_load_n(&again, __ATOMIC_RELAXED))
        hl_engine_request_pending_call(&requested, run);
}

static void stop(void) {
    hl_newthreads_set(NULL);
} /* GIL held */

/* In a forked child: no call is ever requested there (the callback is not released: no
 * Python call is allowed in an atfork handler). */
static void after_fork_child(void) {
    __atomic_store_n(&enabled, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&requested, 0, __ATOMIC_RELAXED);
}

const hl_engine_part hl_newthreads_part = {
    .stop = stop,
    .tick = tick,
    .after_fork_child = after_fork_child,
};
