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
 *      the profile) and releases the GIL,
 *   3. waits, without the GIL, for the attacher's DIR/stop (or an error, or the directory gone),
 *   4. takes the GIL again to stop the profile and write it into DIR, and ends.
 * No thread of heatline's is left in the process after that. The library stays loaded (it is
 * small and holds nothing); a later attach calls heatline_agent_attach again.
 *
 * It does not link against libpython: the few C API functions it calls are looked up in the
 * process (dlsym) when the thread starts, so one agent serves every CPython the engine does,
 * whether the interpreter is in the executable or in a libpython.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))
#define PY_FILE_INPUT 257 /* Py_file_input */
#define WAIT_NS 20000000  /* between two looks for the stop file */
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
 * left alone): import heatline's attach module (from the attacher's install directory, on
 * sys.path only for that import) and hand it the action. Its errors go to DIR/error. */
static const char attach_code[] =
    "def _attach(directory, action):\n"
    "    import sys\n"
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
    "_attach(directory, action)\n";

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

static void sleep_ns(long ns) {
    struct timespec wait = {0, ns};
    nanosleep(&wait, NULL);
}

static int exists(const char *directory, const char *name) {
    char path[4200];
    snprintf(path, sizeof(path), "%s/%s", directory, name);
    return access(path, F_OK) == 0;
}

/* Runs attach_code with the GIL for action ("start", "stop"). */
static void act(const api *py, const char *directory, const char *action) {
    if (!py->is_initialized() || py->is_finalizing()) return;
    int state = py->ensure();
    object globals = py->dict_new();
    object dir = py->decode(directory);
    object what = py->decode(action);
    if (globals != NULL && dir != NULL && what != NULL &&
        py->dict_set(globals, "__builtins__", py->builtins()) == 0 &&
        py->dict_set(globals, "directory", dir) == 0 &&
        py->dict_set(globals, "action", what) == 0) {
        object result = py->run(attach_code, PY_FILE_INPUT, globals, globals, NULL);
        if (result != NULL) py->decref(result);
    }
    py->clear(); /* nothing of ours is left pending for the program */
    if (what != NULL) py->decref(what);
    if (dir != NULL) py->decref(dir);
    if (globals != NULL) py->decref(globals);
    py->release(state);
}

static void *agent_main(void *argument) {
    char *directory = argument;
    api py;
    if (resolve(&py) == 0) {
        for (int i = 0; i < INIT_WAIT_ROUNDS && !py.is_initialized(); i++) sleep_ns(WAIT_NS);
        act(&py, directory, "start");
        while (exists(directory, "request") && !exists(directory, "stop") &&
               !exists(directory, "error") && !exists(directory, "profile.json"))
            sleep_ns(WAIT_NS);
        /* Stopped, or the attacher gone (its directory removed): the profile must not run on
         * (a stop of a profile that never started, or ended at exit, does nothing). */
        if (!exists(directory, "profile.json")) act(&py, directory, "stop");
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
