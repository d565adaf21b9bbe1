/* agent.c: the library heatline attach loads into a running Python process (inject.h), built
 * as a shared object of its own (heatline/_agent*.so), apart from the engine.
 *
 * It runs no Python on the thread that loads it or calls it: that thread was borrowed at an
 * arbitrary point and may hold the GIL, or be in the middle of anything. heatline_agent_attach
 * only copies its argument (the attach's private directory) and starts a thread of its own,
 * with every signal blocked (the program's handlers stay the only ones that run, on its own
 * threads), then returns. That thread:
 *   1. waits until the interpreter is initialised,
 *   2. takes the GIL as a new thread does (PyGILState_Ensure: safe whatever the other threads
 *      do; a thread blocked in a system call has released it), runs the attach's start
 *      (heatline.run.attached: imports heatline from the directory named in DIR/root, starts
 *      the profile, and has the engine watch for the stop: detach.h) and releases the GIL,
 *   3. ends.
 * While attached, no thread of heatline's but the engine's sampler lives in the process: the
 * sampler sees the attacher's DIR/stop (or the directory gone) and starts the short-lived
 * thread that stops the profile (detach.h). The library stays loaded (it is small and holds
 * nothing); a later attach calls heatline_agent_attach again.
 *
 * It does not link against libpython: the few C API functions it calls are looked up in the
 * process (dlsym) when the thread starts, so one agent serves every CPython the engine does,
 * whether the interpreter is in the executable or in a libpython.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))
#define PY_FILE_INPUT 257 /* Py_file_input */
#define WAIT_NS 20000000  /* between two looks for an initialised interpreter */
#define INIT_WAIT_ROUNDS 500

typedef void *object;
typedef struct api {
    int (*is_initialized)(void);
    int (*is_finalizing)(void);
    int (*ensure)(void);
    void (*release)(int);
    object (*dict_new)(void);
    int (*dict_set)(object, const char *, object);
    object (*builtins)(void);
    object (*decode)(const char *);
    object (*run)(const char *, int, object, object, void *);
    void (*clear)(void);
    void (*decref)(object);
} api;

/* What the thread runs with the GIL held, in a namespace of its own (the program's __main__ is
 * left alone): claim the attach, import heatline's attach module (from the attacher's install
 * directory, on sys.path only for that import) and start. Its errors go to DIR/error.
 *
 * The same code is the script heatline attach hands to sys.remote_exec on 3.14+ (PEP 768; the
 * attacher reads it from this library's heatline_agent_code), run by the program's main thread
 * at its next safe point with `method` 'remote_exec' instead of 'agent'. Where both ways are
 * tried (the main thread did not get there soon), the first to create DIR/claimed starts the
 * profile and writes its method there; the other, or a pending remote_exec that runs after
 * the attach is over (its directory gone), does nothing. Nothing it raises leaves it.
 *
 * All of it under the fork guard, a module of its own in sys.modules ('_heatline_attach_guard',
 * made at the first attach; run/attached.py takes it for the stop too): a lock that a
 * before-fork hook (registered once per process) takes, and the ids of heatline's short-lived
 * threads, which the hook waits to be gone. A fork() of the program's meanwhile waits until
 * heatline's thread has finished importing and starting (or stopping) and ended, so that its
 * child never inherits a module half imported by that thread (its module lock held by a thread
 * the child does not have: the child hung at its exit, waiting for 'threading'), nor counts
 * that thread (CPython 3.12+ warns at a fork of a multi-threaded process). The wait is bounded
 * (10 s), in case the forking thread holds what the import needs. */
EXPORT const char heatline_agent_code[] =
    "def _guard():\n"
    "    import sys\n"
    "    guard = sys.modules.get('_heatline_attach_guard')\n"
    "    if guard is None:\n"
    "        import _thread, os, time\n"
    "        guard = type(sys)('_heatline_attach_guard')\n"
    "        guard.lock = _thread.allocate_lock()\n"
    "        guard.tids = set()\n"
    "        held = []\n"
    "        def before():\n"
    "            if guard.lock.acquire(True, 10):\n"
    "                held.append(True)\n"
    "            for tid in list(guard.tids):\n"
    "                for _ in range(1000):\n"
    "                    if not os.path.exists('/proc/self/task/%d' % tid):\n"
    "                        break\n"
    "                    time.sleep(0.0001)\n"
    "                guard.tids.discard(tid)\n"
    "        def after():\n"
    "            if held:\n"
    "                held.pop()\n"
    "                guard.lock.release()\n"
    "        def after_in_child():\n"
    "            guard.tids.clear()\n"
    "            after()\n"
    "        os.register_at_fork(before=before, after_in_parent=after,\n"
    "                            after_in_child=after_in_child)\n"
    "        sys.modules['_heatline_attach_guard'] = guard\n"
    "    return guard\n"
    "def _attach(directory, action, method):\n"
    "    import os, sys\n"
    "    try:\n"
    "        fd = os.open(directory + '/claimed', os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)\n"
    "    except OSError:\n"
    "        return\n"
    "    os.write(fd, method.encode())\n"
    "    os.close(fd)\n"
    "    module = sys.modules.get('heatline.run.attached')\n"
    "    if module is None:\n"
    "        try:\n"
    "            with open(directory + '/root', encoding='utf-8') as file:\n"
    "                root = file.read()\n"
    "            added = root not in sys.path\n"
    "            if added:\n"
    "                sys.path.insert(0, root)\n"
    "            try:\n"
    "                import heatline.run.attached as module\n"
    "            finally:\n"
    "                if added and root in sys.path:\n"
    "                    sys.path.remove(root)\n"
    "        except BaseException as exc:\n"
    "            try:\n"
    "                with open(directory + '/error', 'w', encoding='utf-8') as file:\n"
    "                    file.write('importing heatline in the process failed: '\n"
    "                               + type(exc).__name__ + ': ' + str(exc))\n"
    "            except OSError:\n"
    "                pass\n"
    "            return\n"
    "    module.act(directory, action)\n"
    "def _guarded(directory, action, method):\n"
    "    import _thread\n"
    "    guard = _guard()\n"
    "    with guard.lock:\n"
    "        if method == 'agent':\n"
    "            guard.tids.add(_thread.get_native_id())\n"
    "        _attach(directory, action, method)\n"
    "try:\n"
    "    _guarded(directory, action, method)\n"
    "except Exception:\n"
    "    pass\n";

static int resolve(api *py) {
    void *any = RTLD_DEFAULT;
    *(void **)&py->is_initialized = dlsym(any, "Py_IsInitialized");
    *(void **)&py->is_finalizing = dlsym(any, "Py_IsFinalizing"); /* 3.13 */
    if (py->is_finalizing == NULL) *(void **)&py->is_finalizing = dlsym(any, "_Py_IsFinalizing");
    *(void **)&py->ensure = dlsym(any, "PyGILState_Ensure");
    *(void **)&py->release = dlsym(any, "PyGILState_Release");
    *(void **)&py->dict_new = dlsym(any, "PyDict_New");
    *(void **)&py->dict_set = dlsym(any, "PyDict_SetItemString");
    *(void **)&py->builtins = dlsym(any, "PyEval_GetBuiltins");
    *(void **)&py->decode = dlsym(any, "PyUnicode_DecodeFSDefault");
    *(void **)&py->run = dlsym(any, "PyRun_StringFlags");
    *(void **)&py->clear = dlsym(any, "PyErr_Clear");
    *(void **)&py->decref = dlsym(any, "Py_DecRef");
    return py->is_initialized && py->is_finalizing && py->ensure && py->release && py->dict_new &&
                   py->dict_set && py->builtins && py->decode && py->run && py->clear && py->decref
               ? 0
               : -1;
}

/* DIRECTORY/progress: "TID STEP", rewritten at each step of the thread (thread, no-python,
 * waiting-gil, gil, done), so that an attacher that got no answer can say how far the thread
 * came and, from /proc, what it is doing (engine/attach.py). Best effort: a failed write is let be. */
static void progress(const char *directory, const char *step) {
    char path[4200], text[64];
    snprintf(path, sizeof(path), "%s/progress", directory);
    int length = snprintf(text, sizeof(text), "%ld %s\n", (long)syscall(SYS_gettid), step);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) return;
    if (write(fd, text, (size_t)length) < 0) { /* nothing to do */
    }
    close(fd);
}

static void sleep_ns(long ns) {
    struct timespec wait = {0, ns};
    nanosleep(&wait, NULL);
}

/* Runs heatline_agent_code with the GIL for action ("start"). */
static void act(const api *py, const char *directory, const char *action) {
    if (!py->is_initialized() || py->is_finalizing()) return;
    progress(directory, "waiting-gil");
    int state = py->ensure();
    progress(directory, "gil");
    object globals = py->dict_new();
    object dir = py->decode(directory);
    object what = py->decode(action);
    object how = py->decode("agent");
    if (globals != NULL && dir != NULL && what != NULL && how != NULL &&
        py->dict_set(globals, "__builtins__", py->builtins()) == 0 &&
        py->dict_set(globals, "directory", dir) == 0 &&
        py->dict_set(globals, "action", what) == 0 && py->dict_set(globals, "method", how) == 0) {
        object result = py->run(heatline_agent_code, PY_FILE_INPUT, globals, globals, NULL);
        if (result != NULL) py->decref(result);
    }
    py->clear(); /* nothing of ours is left pending for the program */
    if (how != NULL) py->decref(how);
    if (what != NULL) py->decref(what);
    if (dir != NULL) py->decref(dir);
    if (globals != NULL) py->decref(globals);
    py->release(state);
    progress(directory, "done");
}

static void *agent_main(void *argument) {
    char *directory = argument;
    api py;
    progress(directory, "thread");
    if (resolve(&py) != 0) progress(directory, "no-python");
    else {
        for (int i = 0; i < INIT_WAIT_ROUNDS && !py.is_initialized(); i++) sleep_ns(WAIT_NS);
        act(&py, directory, "start");
    }
    free(directory);
    return NULL;
}

/* Called by heatline attach (inject.h) on a borrowed thread: starts the agent's thread for the
 * attach whose private directory is `directory`. Returns 0 or -errno. */
EXPORT int heatline_agent_attach(const char *directory) {
    char *copy = strdup(directory);
    if (copy == NULL) return -ENOMEM;
    pthread_attr_t attributes;
    if (pthread_attr_init(&attributes) != 0) {
        free(copy);
        return -ENOMEM;
    }
    pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
    sigset_t all, before;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &before); /* the new thread inherits the mask */
    pthread_t thread;
    int error = pthread_create(&thread, &attributes, agent_main, copy);
    pthread_sigmask(SIG_SETMASK, &before, NULL);
    pthread_attr_destroy(&attributes);
    if (error != 0) {
        free(copy);
        return -error;
    }
    return 0;
}
