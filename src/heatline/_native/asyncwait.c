/* asyncwait.c: see asyncwait.h (why and the rule). This file reads the tasks on the main
 * thread, with the GIL, through the C API only, and charges the held-back wait. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "asyncwait.h"

#include <string.h>

#include "compat.h"
#include "engine_part.h"

/* A task's chain is followed this deep at most (a coroutine awaiting a coroutine ...). */
#define MAX_CHAIN 64
/* Tasks read per wait at most: beyond, the wait is split among the first ones read. */
#define MAX_TASKS 4096

static int requested; /* a pending call is queued and has not run yet */
static hl_asyncwait_results results; /* under the engine lock */

typedef struct task_chain {
    uintptr_t frames[MAX_CHAIN]; /* the suspended frames, the task's coroutine first */
    int length;
    int waits_on_tasks; /* awaits a Task, gather(), wait(), wait_for() or a TaskGroup's end */
} task_chain;

typedef struct task_list {
    task_chain *chains;
    size_t count, capacity;
    PyObject *held; /* a list holding every object whose frame address is kept */
} task_list;

/* Whether a code object is one of asyncio's own functions that wait for other tasks. */
static int waits_for_tasks(PyObject *generator) {
    PyObject *code =
        PyObject_GetAttrString(generator, PyCoro_CheckExact(generator) ? "cr_code" : "gi_code");
    int found = 0;
    if (code != NULL && PyCode_Check(code)) {
        PyCodeObject *c = (PyCodeObject *)code;
        const char *file =
            PyUnicode_Check(c->co_filename) ? PyUnicode_AsUTF8(c->co_filename) : NULL;
        const char *name = PyUnicode_Check(c->co_name) ? PyUnicode_AsUTF8(c->co_name) : NULL;
        if (file != NULL && name != NULL) {
            size_t n = strlen(file);
            int tasks = n >= 9 && strcmp(file + n - 9, "/tasks.py") == 0 && strstr(file, "asyncio");
            int groups = n >= 14 && strcmp(file + n - 14, "/taskgroups.py") == 0;
            found = (tasks && (strcmp(name, "_wait") == 0 || strcmp(name, "wait") == 0 ||
                               strcmp(name, "wait_for") == 0)) ||
                    (groups && (strcmp(name, "__aexit__") == 0 || strcmp(name, "_aexit") == 0));
        }
    }
    Py_XDECREF(code);
    PyErr_Clear();
    return found;
}

/* Whether the future a task waits on is a task itself or a gather() of tasks. */
static int future_of_tasks(PyObject *waiter, PyObject *task_type) {
    if (waiter == NULL || waiter == Py_None) return 0;
    if (task_type != NULL && PyType_Check(task_type) &&
        PyObject_TypeCheck(waiter, (PyTypeObject *)task_type))
        return 1;
    const char *name = Py_TYPE(waiter)->tp_name;
    return strcmp(name, "_GatheringFuture") == 0;
}

static int attribute_is(PyObject *object, const char *name, PyObject *expected) {
    PyObject *value = PyObject_GetAttrString(object, name);
    int same = value != NULL && value == expected;
    Py_XDECREF(value);
    PyErr_Clear();
    return same;
}

static int pending(PyObject *task) {
    PyObject *state = PyObject_GetAttrString(task, "_state");
    int yes = state != NULL && PyUnicode_Check(state) &&
              PyUnicode_CompareWithASCIIString(state, "PENDING") == 0;
    Py_XDECREF(state);
    PyErr_Clear();
    return yes;
}

/* Adds a pending task of the loop, with its coroutine chain, to *list. */
static void add_task(task_list *list, PyObject *task, PyObject *loop, PyObject *task_type) {
    if (list->count >= MAX_TASKS || !attribute_is(task, "_loop", loop) || !pending(task)) return;
    if (list->count == list->capacity) {
        size_t capacity = list->capacity ? 2 * list->capacity : 16;
        task_chain *grown = PyMem_RawRealloc(list->chains, capacity * sizeof(*grown));
        if (grown == NULL) return;
        list->chains = grown;
        list->capacity = capacity;
    }
    task_chain *chain = &list->chains[list->count];
    memset(chain, 0, sizeof(*chain));
    PyObject *waiter = PyObject_GetAttrString(task, "_fut_waiter");
    PyErr_Clear();
    chain->waits_on_tasks = future_of_tasks(waiter, task_type);
    Py_XDECREF(waiter);

    PyObject *object = PyObject_GetAttrString(task, "_coro");
    PyErr_Clear();
    PyObject *innermost = NULL;
    while (object != NULL && object != Py_None && chain->length < MAX_CHAIN &&
           (PyCoro_CheckExact(object) || PyGen_Check(object))) {
        uintptr_t frame = hl_compat_suspended_frame(object);
        if (frame != 0 && PyList_Append(list->held, object) == 0) {
            chain->frames[chain->length++] = frame;
            innermost = object;
        }
        PyObject *next =
            PyObject_GetAttrString(object, PyCoro_CheckExact(object) ? "cr_await" : "gi_yieldfrom");
        PyErr_Clear();
        Py_DECREF(object);
        object = next;
    }
    Py_XDECREF(object);
    if (chain->length == 0) return;
    if (innermost != NULL && waits_for_tasks(innermost)) chain->waits_on_tasks = 1;
    list->count++;
}

/* Adds the tasks of one registry: a WeakSet (its .data holds weak references) or a set. */
static void add_registry(task_list *list, PyObject *registry, PyObject *loop, PyObject *task_type) {
    int weak = !PyAnySet_Check(registry);
    PyObject *items = weak ? PyObject_GetAttrString(registry, "data") : registry;
    if (items == NULL) {
        PyErr_Clear();
        return;
    }
    if (!weak) Py_INCREF(items);
    /* A copy first: a garbage collection during the reads below may run a weak reference's
     * callback, which removes it from the set being walked. */
    PyObject *copy = PyAnySet_Check(items) ? PySequence_List(items) : NULL;
    Py_DECREF(items);
    if (copy == NULL) {
        PyErr_Clear();
        return;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(copy); i++) {
        PyObject *item = PyList_GET_ITEM(copy, i);
        PyObject *task = weak ? hl_compat_weakref_target(item) : (Py_INCREF(item), item);
        if (task == NULL) continue;
        add_task(list, task, loop, task_type);
        Py_DECREF(task);
    }
    Py_DECREF(copy);
}

/* A module the program has imported, or NULL (never imported here). */
static PyObject *imported(const char *name) {
    PyObject *key = PyUnicode_FromString(name);
    PyObject *module = key != NULL ? PyImport_GetModule(key) : NULL;
    Py_XDECREF(key);
    PyErr_Clear();
    return module;
}

/* The running loop's pending tasks with their suspended frames. Returns 0, or -1 when no
 * asyncio loop runs on this thread. */
static int read_tasks(task_list *list) {
    static const char *const weak_registries[] = {"_scheduled_tasks", "_all_tasks"};
    int result = -1;
    PyObject *tasks = imported("asyncio.tasks"), *events = imported("asyncio.events");
    PyObject *get_loop = NULL, *loop = NULL, *task_type = NULL, *eager = NULL, *all_tasks = NULL;
    if (tasks == NULL || events == NULL) goto done;
    get_loop = PyObject_GetAttrString(events, "_get_running_loop");
    loop = get_loop != NULL && PyCFunction_Check(get_loop) ? PyObject_CallNoArgs(get_loop) : NULL;
    if (loop == NULL || loop == Py_None) goto done;
    list->held = PyList_New(0);
    if (list->held == NULL) goto done;
    task_type = PyObject_GetAttrString(tasks, "Task");
    PyErr_Clear();
    /* 3.14+: tasks of the C Task type are listed only in per-thread lists of the interpreter's,
     * which asyncio.all_tasks, a C function there (_asyncio.all_tasks), reads with those of the
     * registries below; the set it returns holds the loop's pending tasks. */
    all_tasks = PyObject_GetAttrString(tasks, "all_tasks");
    if (all_tasks != NULL && PyCFunction_Check(all_tasks)) {
        PyObject *pending_tasks = PyObject_CallOneArg(all_tasks, loop);
        if (pending_tasks != NULL && PyAnySet_Check(pending_tasks)) {
            add_registry(list, pending_tasks, loop, task_type);
            Py_DECREF(pending_tasks);
            result = 0;
            goto done;
        }
        Py_XDECREF(pending_tasks);
    }
    PyErr_Clear();
    for (size_t i = 0; i < sizeof(weak_registries) / sizeof(*weak_registries); i++) {
        PyObject *registry = PyObject_GetAttrString(tasks, weak_registries[i]);
        PyErr_Clear();
        if (registry == NULL) continue;
        add_registry(list, registry, loop, task_type);
        Py_DECREF(registry);
        break; /* 3.12+ has _scheduled_tasks, earlier versions _all_tasks */
    }
    eager = PyObject_GetAttrString(tasks, "_eager_tasks"); /* 3.12+ */
    if (eager != NULL && PyAnySet_Check(eager)) add_registry(list, eager, loop, task_type);
    result = 0;
done:
    Py_XDECREF(all_tasks);
    Py_XDECREF(eager);
    Py_XDECREF(task_type);
    Py_XDECREF(loop);
    Py_XDECREF(get_loop);
    Py_XDECREF(events);
    Py_XDECREF(tasks);
    PyErr_Clear();
    return result;
}

static void release_tasks(task_list *list) {
    PyMem_RawFree(list->chains);
    Py_XDECREF(list->held);
    memset(list, 0, sizeof(*list));
}

/* Charges one task's share: the wait's stack down to the loop's frame, then the task's
 * suspended frames; the line is the chain's innermost user frame (the wait's own without
 * one). Lock held. Returns 0, or -1 when nothing of the chain could be read. */
static int charge_task_locked(const hl_loop_wait *wait, const task_chain *chain, uint64_t ns) {
    HL_ASSERT_ENGINE_LOCKED();
    hl_stats *stats = hl_engine_stats_locked();
    uint64_t keys[HL_MAX_DEPTH];
    uint32_t length = wait->loop_depth;
    memcpy(keys, wait->keys, length * sizeof(*keys));
    hl_frame target = wait->target;
    int read = 0;
    for (int i = 0; i < chain->length && length < HL_MAX_DEPTH; i++) {
        hl_frame frame;
        if (hl_engine_frame_at_locked(chain->frames[i], &frame) != 0) continue;
        keys[length++] = HL_FRAME_KEY(frame.function, frame.line);
        if (frame.user) target = frame;
        read++;
    }
    if (read == 0) return -1;
    uint32_t stack_id;
    if (hl_stats_charge_line(stats, target.file, target.line, target.function, HL_SYSTEM, ns) ==
            0 &&
        hl_stats_charge_stack(stats, wait->thread, keys, length, HL_SYSTEM, ns, &stack_id) == 0)
        return 0;
    stats->stacks_dropped_ns += ns; /* no memory for the line or the stack */
    return 0;
}

/* Splits the wait among the tasks (asyncwait.h's rule). Lock held. */
static void charge_locked(const hl_loop_wait *wait, const task_list *list) {
    HL_ASSERT_ENGINE_LOCKED();
    size_t sharing = 0;
    for (size_t i = 0; i < list->count; i++) sharing += !list->chains[i].waits_on_tasks;
    int all = sharing == 0; /* every task waits on tasks: they all share */
    if (all) sharing = list->count;
    if (sharing == 0) {
        hl_engine_charge_loop_wait_locked(wait);
        return;
    }
    uint64_t share = wait->ns / sharing, left = wait->ns, charged = 0;
    for (size_t i = 0, n = 0; i < list->count; i++) {
        const task_chain *chain = &list->chains[i];
        if (!all && chain->waits_on_tasks) continue;
        uint64_t ns = ++n == sharing ? left : share; /* the last share takes the remainder */
        left -= ns;
        if (charge_task_locked(wait, chain, ns) == 0) charged += ns;
    }
    if (charged < wait->ns) { /* chains that could not be read: back where it was sampled */
        hl_loop_wait rest = *wait;
        rest.ns = wait->ns - charged;
        hl_engine_charge_loop_wait_locked(&rest);
    }
    results.await_ns += charged;
    results.waits++;
}

/* The pending call: on the main thread, with the GIL, right after the wait returned. */
static int run(void *unused) {
    (void)unused;
    hl_loop_wait wait;
    __atomic_store_n(&requested, 0, __ATOMIC_RELEASE); /* a wait from now on asks again */
    hl_engine_lock();
    int taken = hl_engine_take_loop_wait_locked(&wait);
    hl_engine_unlock();
    if (!taken) return 0;

    /* An exception being raised (a signal handler's, run just before) stays as it is. */
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    task_list list = {0};
    hl_engine_enter(); /* what the reads allocate is not the program's */
    int found = read_tasks(&list) == 0;
    hl_engine_lock();
    if (found) charge_locked(&wait, &list);
    else hl_engine_charge_loop_wait_locked(&wait);
    hl_engine_unlock();
    release_tasks(&list);
    hl_engine_leave();
    PyErr_Restore(type, value, traceback);
    return 0;
}

void hl_asyncwait_request(void) {
    hl_engine_request_pending_call(&requested, run);
}

void hl_asyncwait_results_get_locked(hl_asyncwait_results *out) {
    HL_ASSERT_ENGINE_LOCKED();
    *out = results;
}

static void reset(void) {
    memset(&results, 0, sizeof(results));
}

/* In a forked child: the parent's queued call is not the child's. */
static void after_fork_child(void) {
    __atomic_store_n(&requested, 0, __ATOMIC_RELAXED);
}

const hl_engine_part hl_asyncwait_part = {
    .reset = reset,
    .after_fork_child = after_fork_child,
};
