/* periodic.c: see periodic.h. */
#include <Python.h>

#include "periodic.h"

#include "clock.h"
#include "engine_part.h"

static PyObject *callback;    /* owned; touched only with the GIL */
static uint64_t write_interval_ns;    /* 0: off */
static uint64_t next_ns;
static int requested;         /* a pending call is queued and has not run yet */

void hl_periodic_set(uint64_t period, PyObject *new_callback) {
    HL_ASSERT(PyGILState_Check()); /* the callback's references are the GIL's to change */
    PyObject *old = callback;
    callback = NULL;
    __atomic_store_n(&write_interval_ns, 0, __ATOMIC_RELAXED);
    if (period != 0 && new_callback != NULL && new_callback != Py_None) {
        Py_INCREF(new_callback);
        callback = new_callback;
        __atomic_store_n(&next_ns, hl_now_ns() + period, __ATOMIC_RELAXED);
        __atomic_store_n(&write_interval_ns, period, __ATOMIC_RELAXED);
    }
    Py_XDECREF(old);
}

/* In the main thread, with the GIL, where the interpreter runs pending calls. An exception
 * the callback lets through (KeyboardInterrupt or SystemExit raised by the program's own
 * signal handlers while it ran) is raised in the program there, as it would have been. */
static int run(void *unused) {
    (void)unused;
    int result = 0;
    PyObject *function = callback;
    if (function != NULL) {
        int was_paused = hl_engine_paused();
        Py_INCREF(function);
        hl_engine_set_paused(1);
        hl_engine_wait_for_tick(); /* a tick that read the flag before charges nothing of this */
        PyObject *value = PyObject_CallObject(function, NULL);
        hl_engine_set_paused(was_paused);
        Py_DECREF(function);
        if (value == NULL) result = -1;
        Py_XDECREF(value);
        uint64_t period = __atomic_load_n(&write_interval_ns, __ATOMIC_RELAXED);
        /* the next period starts after this write: a slow write never queues writes */
        if (period != 0) __atomic_store_n(&next_ns, hl_now_ns() + period, __ATOMIC_RELAXED);
    }
    __atomic_store_n(&requested, 0, __ATOMIC_RELEASE);
    return result;
}

static void tick(uint64_t now) {
    uint64_t period = __atomic_load_n(&write_interval_ns, __ATOMIC_RELAXED);
    if (period == 0 || now < __atomic_load_n(&next_ns, __ATOMIC_RELAXED)) return;
    hl_engine_request_pending_call(&requested, run);
}

static void stop(void) {
    hl_periodic_set(0, NULL);
} /* GIL held */

/* In a forked child: no call is ever requested there (the callback is not released: no
 * Python call is allowed in an atfork handler). */
static void after_fork_child(void) {
    __atomic_store_n(&write_interval_ns, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&requested, 0, __ATOMIC_RELAXED);
}

const hl_engine_part hl_periodic_part = {
    .stop = stop,
    .tick = tick,
    .after_fork_child = after_fork_child,
};
