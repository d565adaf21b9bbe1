/* detach.c: see detach.h. */
#include <Python.h> /* first, as CPython requires; it defines _GNU_SOURCE (3.9 and 3.10 without
                     * a guard, so defining it here too fails the -Werror build there) */

#include "detach.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "engine_part.h"

#define PATH_BYTES 4096
#define POLL_NS 20000000u /* between two looks for the stop */

/* The watch. Set and cleared with the GIL held and the engine lock taken (so the sampler,
 * which reads it at its wake-ups under that lock, sees it whole); the callback reference is
 * owned here until the sampler hands it to the thread it starts (then NULL here). */
static struct {
    char stop[PATH_BYTES], request[PATH_BYTES]; /* "" when not watching */
    PyObject *callback;
    uint64_t next_poll_ns;
} watch;

/* The stopping thread once started: 1 until it has returned (atomic; a fork waits for it). */
static int stopper_running;
static int stopper_tid; /* its kernel id, set by itself */

int hl_detach_watch(const char *stop_path, const char *request_path, PyObject *callback) {
    HL_ASSERT(PyGILState_Check());
    if (strlen(stop_path) >= PATH_BYTES || strlen(request_path) >= PATH_BYTES) return -ENAMETOOLONG;
    hl_engine_lock();
    PyObject *old = watch.callback;
    watch.callback = NULL;
    watch.stop[0] = watch.request[0] = '\0';
    if (callback != NULL && callback != Py_None) {
        Py_INCREF(callback);
        watch.callback = callback;
        strcpy(watch.stop, stop_path);
        strcpy(watch.request, request_path);
        watch.next_poll_ns = 0;
    }
    hl_engine_unlock();
    Py_XDECREF(old);
    return 0;
}

/* The stopping thread: the GIL taken as any new thread takes it, the callback called (its
 * errors are the callback's to report: printed nowhere), the reference given back. */
static void *stopper_main(void *argument) {
    PyObject *callback = argument;
    __atomic_store_n(&stopper_tid, (int)gettid(), __ATOMIC_RELEASE);
    PyGILState_STATE state = PyGILState_Ensure();
    PyObject *result = PyObject_CallObject(callback, NULL);
    if (result == NULL) PyErr_Clear();
    Py_XDECREF(result);
    Py_DECREF(callback);
    PyGILState_Release(state);
    __atomic_store_n(&stopper_running, 0, __ATOMIC_RELEASE);
    return NULL;
}

static void start_stopper_locked(void) {
    PyObject *callback = watch.callback;
    watch.callback = NULL;
    watch.stop[0] = watch.request[0] = '\0';
    pthread_attr_t attributes;
    if (pthread_attr_init(&attributes) != 0) return; /* the reference is lost: harmless */
    pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
    sigset_t all, before; /* the program's signals stay on its own threads */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &before);
    pthread_t thread;
    __atomic_store_n(&stopper_running, 1, __ATOMIC_RELEASE);
    if (pthread_create(&thread, &attributes, stopper_main, callback) != 0)
        __atomic_store_n(&stopper_running, 0, __ATOMIC_RELEASE);
    pthread_sigmask(SIG_SETMASK, &before, NULL);
    pthread_attr_destroy(&attributes);
}

/* The sampler thread, at every wake-up, engine lock held. */
static void wake(uint64_t now) {
    if (watch.callback == NULL || now < watch.next_poll_ns) return;
    watch.next_poll_ns = now + POLL_NS;
    if (access(watch.stop, F_OK) == 0 || access(watch.request, F_OK) != 0) start_stopper_locked();
}

static void stop(void) {
    hl_detach_watch("", "", NULL);
} /* GIL held, lock not held */

/* Before os.fork(), GIL held, engine lock not held: a stop under way is let finish (it needs the
 * GIL, released meanwhile, and the engine), so that the fork neither copies its half-done work
 * nor is counted with its thread (3.12+'s warning about forking a multi-threaded process). The
 * thread's last steps after the flag (its return) are waited for as the sampler's are. */
static void suspend_for_fork(void) {
    if (!__atomic_load_n(&stopper_running, __ATOMIC_ACQUIRE)) return;
    struct timespec pause = {0, 100000};
    Py_BEGIN_ALLOW_THREADS;
    while (__atomic_load_n(&stopper_running, __ATOMIC_ACQUIRE)) nanosleep(&pause, NULL);
    /* pthread's end is a little before the process stops counting the thread: 100 ms at most */
    char path[64];
    snprintf(path, sizeof(path), "/proc/self/task/%d",
             __atomic_load_n(&stopper_tid, __ATOMIC_ACQUIRE));
    for (int i = 0; i < 1000 && access(path, F_OK) == 0; i++) nanosleep(&pause, NULL);
    Py_END_ALLOW_THREADS;
}

/* In a forked child: nothing is watched there (the reference is not released: no Python call
 * is allowed in an atfork handler). */
static void after_fork_child(void) {
    __atomic_store_n(&stopper_running, 0, __ATOMIC_RELAXED);
    watch.callback = NULL;
    watch.stop[0] = watch.request[0] = '\0';
}

const hl_engine_part hl_detach_part = {
    .stop = stop,
    .wake = wake,
    .after_fork_child = after_fork_child,
    .suspend_for_fork = suspend_for_fork,
};
