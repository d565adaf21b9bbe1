/* asyncwait.c: see asyncwait.h (why and the rule). This file reads the tasks on the main
 * thread, with the GIL, through the C API only, and charges the held-back wait. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "asyncwait.h"

#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "compat.h"
#include "engine_part.h"

/* A task's chain is followed this deep at most (a coroutine awaiting a coroutine ...). */
#define MAX_CHAIN 64
/* Tasks read per wait at most: beyond, the wait is split among the first ones read. */
#define MAX_TASKS 4096
/* Handles whose callbacks are followed per wait at most, and registered descriptors polled. */
#define MAX_HANDLES 1024
#define MAX_FDS 4096
/* From one handle's callback and arguments, objects followed at most, and how far; a task met
 * wakes only this near the callback (its step, the task a timeout cancels), not as the task
 * that a connection's protocol serves, which may await something else. */
#define MAX_WALK 256
#define MAX_WALK_DEPTH 6
#define MAX_TASK_DEPTH 2
/* Items of one container followed at most. */
#define MAX_ITEMS 64

static int requested; /* a pending call is queued and has not run yet */
static hl_asyncwait_results results; /* under the engine lock */

typedef struct task_chain {
    uintptr_t frames[MAX_CHAIN]; /* the suspended frames, the task's coroutine first */
    int length;
    int waits_on_tasks; /* awaits a Task, gather(), wait(), wait_for() or a TaskGroup's end */
    int woken;          /* a callback that ended the wait wakes it */
    double due; /* when the earliest of those was due: a timer's time, else the wait's end */
    uintptr_t task, waiter; /* the task and the future it awaits (0: none), both held */
} task_chain;

typedef struct task_list {
    task_chain *chains;
    size_t count, capacity;
    PyObject *held; /* a list holding every object whose frame address is kept */
    PyObject *loop; /* the running loop */
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
    if (PyList_Append(list->held, task) == 0) chain->task = (uintptr_t)task;
    if (waiter != NULL && waiter != Py_None && PyList_Append(list->held, waiter) == 0)
        chain->waiter = (uintptr_t)waiter;
    PyErr_Clear();
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
    if (result == 0) {
        list->loop = loop;
        loop = NULL;
    }
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

/* An attribute of an object of the loop's (the loop, its selector, a handle), read only where
 * its type looks attributes up the generic way: a class defining __getattr__ or
 * __getattribute__ is not asked (its code would run here). NULL without an exception when
 * absent. */
static PyObject *loop_attribute(PyObject *object, const char *name) {
    if (Py_TYPE(object)->tp_getattro != PyObject_GenericGetAttr) return NULL;
    PyObject *value = PyObject_GetAttrString(object, name);
    PyErr_Clear();
    return value;
}

/* ---- which tasks the wait's end wakes --------------------------------------------------- */

/* The tasks and the futures they await, by address, for finding them among the objects a
 * callback reaches: an open-addressing table of chain indexes, times two, plus one for a task. */
typedef struct chain_index {
    uintptr_t *keys;
    size_t *chains;
    size_t mask;
} chain_index;

static size_t pointer_hash(uintptr_t p) {
    uint64_t h = (uint64_t)p * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 17);
}

static void index_put(chain_index *x, uintptr_t key, size_t chain) {
    if (key == 0) return;
    size_t i = pointer_hash(key) & x->mask;
    while (x->keys[i] != 0) i = (i + 1) & x->mask;
    x->keys[i] = key;
    x->chains[i] = chain;
}

/* Marks woken every chain whose awaited future is object, or whose task is object when
 * tasks count (depth); whether object is either. */
static int index_wake(const chain_index *x, task_list *list, PyObject *object, int depth,
                      double due) {
    uintptr_t key = (uintptr_t)object;
    int found = 0;
    for (size_t i = pointer_hash(key) & x->mask; x->keys[i] != 0; i = (i + 1) & x->mask)
        if (x->keys[i] == key) {
            int task = x->chains[i] & 1;
            task_chain *chain = &list->chains[x->chains[i] >> 1];
            if (task && depth > MAX_TASK_DEPTH) continue;
            if (!chain->woken || due < chain->due) chain->due = due;
            chain->woken = 1;
            found = 1;
        }
    return found;
}

/* The types a walk needs: borrowed from modules held for the wait. */
typedef struct walk_types {
    PyObject *future, *py_future, *loop, *server, *deque, *partial;
} walk_types;

static int instance_of(PyObject *object, PyObject *type) {
    return type != NULL && PyType_Check(type) && PyObject_TypeCheck(object, (PyTypeObject *)type);
}

/* One walk from a handle: breadth first, each object once, its strong references held. */
typedef struct walk {
    PyObject *queue[MAX_WALK];
    int depth[MAX_WALK];
    int count;
    uintptr_t seen[2 * MAX_WALK]; /* open addressing, a power of two */
} walk;

static void push(walk *w, PyObject *object, int depth) {
    if (object == NULL || object == Py_None || w->count >= MAX_WALK) return;
    size_t mask = 2 * MAX_WALK - 1, i = pointer_hash((uintptr_t)object) & mask;
    for (; w->seen[i] != 0; i = (i + 1) & mask)
        if (w->seen[i] == (uintptr_t)object) return;
    w->seen[i] = (uintptr_t)object;
    Py_INCREF(object);
    w->queue[w->count] = object;
    w->depth[w->count++] = depth;
}

static void push_items(walk *w, PyObject *sequence, int depth) {
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(sequence) && i < MAX_ITEMS; i++)
        push(w, PySequence_Fast_GET_ITEM(sequence, i), depth);
}

static void push_values(walk *w, PyObject *dict, int depth) {
    Py_ssize_t position = 0, n = 0;
    PyObject *key, *value;
    while (n++ < MAX_ITEMS && PyDict_Next(dict, &position, &key, &value)) push(w, value, depth);
}

static void push_attribute(walk *w, PyObject *object, const char *name, int depth) {
    PyObject *value = loop_attribute(object, name);
    push(w, value, depth);
    Py_XDECREF(value);
}

/* Whether objects of this kind lead to what a callback wakes: code, modules, types, numbers
 * and strings do not; the loop and a server reach every connection; a future is where a
 * walk ends (what awaits it is found by its address). */
static int leaf(PyObject *o, PyObject *loop, const walk_types *t) {
    return o == loop || PyModule_Check(o) || PyType_Check(o) || PyFunction_Check(o) ||
           PyCode_Check(o) || PyCoro_CheckExact(o) || PyGen_Check(o) || PyUnicode_Check(o) ||
           PyBytes_Check(o) || PyLong_Check(o) || PyFloat_Check(o) || PyBool_Check(o) ||
           instance_of(o, t->future) || instance_of(o, t->py_future) || instance_of(o, t->loop) ||
           instance_of(o, t->server);
}

/* Follows what a callback and its arguments reach (bound methods' objects, containers,
 * weak references, functools.partial, instance dictionaries) and marks woken the tasks met
 * and the tasks awaiting the futures met. Only C code runs: no attribute of a class the
 * program defines is read through getattr. */
static void walk_handle(task_list *list, const chain_index *x, const walk_types *t,
                        PyObject *handle, double due) {
    walk w;
    w.count = 0;
    memset(w.seen, 0, sizeof(w.seen));
    push_attribute(&w, handle, "_callback", 0);
    push_attribute(&w, handle, "_args", 0);
    for (int i = 0; i < w.count; i++) {
        PyObject *o = w.queue[i];
        int depth = w.depth[i] + 1;
        if (index_wake(x, list, o, w.depth[i], due) || leaf(o, list->loop, t) ||
            depth > MAX_WALK_DEPTH)
            continue;
        if (PyMethod_Check(o)) {
            push(&w, PyMethod_GET_SELF(o), depth);
        } else if (PyCFunction_Check(o)) {
            PyObject *self = PyCFunction_GET_SELF(o);
            if (self != NULL && !PyModule_Check(self)) push(&w, self, depth);
        } else if (PyTuple_Check(o) || PyList_Check(o)) {
            push_items(&w, o, depth);
        } else if (PyDict_Check(o)) {
            push_values(&w, o, depth);
        } else if (PyWeakref_CheckRef(o)) {
            PyObject *target = hl_compat_weakref_target(o);
            push(&w, target, depth);
            Py_XDECREF(target);
        } else if (instance_of(o, t->deque)) {
            PyObject *items = PySequence_List(o);
            PyErr_Clear();
            if (items != NULL) push_items(&w, items, depth);
            Py_XDECREF(items);
        } else if (instance_of(o, t->partial)) {
            push_attribute(&w, o, "func", depth);
            push_attribute(&w, o, "args", depth);
            push_attribute(&w, o, "keywords", depth);
        } else if (PyType_HasFeature(Py_TYPE(o), Py_TPFLAGS_HEAPTYPE) &&
                   (Py_TYPE(o)->tp_dictoffset != 0
#ifdef Py_TPFLAGS_MANAGED_DICT
                    || PyType_HasFeature(Py_TYPE(o), Py_TPFLAGS_MANAGED_DICT)
#endif
                        )) {
            PyObject *dict = PyObject_GenericGetDict(o, NULL);
            PyErr_Clear();
            if (dict != NULL && PyDict_Check(dict)) push_values(&w, dict, depth);
            Py_XDECREF(dict);
        }
    }
    for (int i = 0; i < w.count; i++) Py_DECREF(w.queue[i]);
}

static double attribute_double(PyObject *object, const char *name, double otherwise) {
    PyObject *value = loop_attribute(object, name);
    double d = value != NULL && PyFloat_Check(value)  ? PyFloat_AsDouble(value)
               : value != NULL && PyLong_Check(value) ? PyLong_AsDouble(value)
                                                      : otherwise;
    Py_XDECREF(value);
    PyErr_Clear();
    return d;
}

/* Appends to handles the loop's timers that are due (a heap: a due entry's children may be
 * due, a later one's are not). */
static void due_timers(PyObject *loop, PyObject *handles, double now) {
    PyObject *scheduled = loop_attribute(loop, "_scheduled");
    PyErr_Clear();
    if (scheduled == NULL || !PyList_Check(scheduled)) {
        Py_XDECREF(scheduled);
        return;
    }
    now += attribute_double(loop, "_clock_resolution", 0.0);
    Py_ssize_t stack[64], depth = 0;
    stack[depth++] = 0;
    while (depth > 0 && PyList_GET_SIZE(handles) < MAX_HANDLES) {
        Py_ssize_t i = stack[--depth];
        if (i >= PyList_GET_SIZE(scheduled)) continue;
        PyObject *timer = PyList_GET_ITEM(scheduled, i);
        Py_INCREF(timer);
        double when = attribute_double(timer, "_when", now + 1.0);
        if (when <= now) {
            PyObject *cancelled = loop_attribute(timer, "_cancelled");
            PyErr_Clear();
            if (cancelled != Py_True && PyList_Append(handles, timer) != 0) PyErr_Clear();
            Py_XDECREF(cancelled);
            if (depth + 2 <= (Py_ssize_t)(sizeof(stack) / sizeof(*stack))) {
                stack[depth++] = 2 * i + 1;
                stack[depth++] = 2 * i + 2;
            }
        }
        Py_DECREF(timer);
    }
    Py_DECREF(scheduled);
}

/* Appends to handles the callbacks of the selector's registered descriptors that are ready
 * now (asyncio's selectors are level-triggered: what the wait returned is still ready until
 * the callbacks read or write it). A zero-timeout poll(). */
static void ready_descriptors(PyObject *loop, PyObject *handles) {
    PyObject *selector = loop_attribute(loop, "_selector");
    PyObject *keys = selector != NULL ? loop_attribute(selector, "_fd_to_key") : NULL;
    PyErr_Clear();
    PyObject *values = keys != NULL && PyDict_Check(keys) ? PyDict_Values(keys) : NULL;
    Py_XDECREF(keys);
    Py_XDECREF(selector);
    struct pollfd *fds = NULL;
    Py_ssize_t n = values != NULL ? PyList_GET_SIZE(values) : 0;
    if (n > MAX_FDS) n = MAX_FDS;
    if (n > 0) fds = PyMem_RawCalloc((size_t)n, sizeof(*fds));
    if (fds == NULL) goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *key = PyList_GET_ITEM(values, i);
        fds[i].fd = -1; /* ignored by poll() */
        if (!PyTuple_Check(key) || PyTuple_GET_SIZE(key) < 4) continue;
        long fd = PyLong_AsLong(PyTuple_GET_ITEM(key, 1));
        long events = PyLong_AsLong(PyTuple_GET_ITEM(key, 2));
        PyErr_Clear();
        if (fd < 0 || fd > 0x7fffffff || events < 0) continue;
        fds[i].fd = (int)fd;
        fds[i].events = (short)(((events & 1) ? POLLIN : 0) | ((events & 2) ? POLLOUT : 0));
    }
    if (poll(fds, (nfds_t)n, 0) <= 0) goto done;
    for (Py_ssize_t i = 0; i < n && PyList_GET_SIZE(handles) < MAX_HANDLES; i++) {
        short r = fds[i].revents;
        if (fds[i].fd < 0 || r == 0 || (r & POLLNVAL)) continue;
        PyObject *data = PyTuple_GET_ITEM(PyList_GET_ITEM(values, i), 3);
        if (!PyTuple_Check(data) || PyTuple_GET_SIZE(data) != 2) continue; /* (reader, writer) */
        int broken = (r & (POLLERR | POLLHUP)) != 0;
        PyObject *reader = PyTuple_GET_ITEM(data, 0), *writer = PyTuple_GET_ITEM(data, 1);
        if (reader != Py_None && ((r & POLLIN) || broken) && PyList_Append(handles, reader) != 0)
            PyErr_Clear();
        if (writer != Py_None && ((r & POLLOUT) || broken) && PyList_Append(handles, writer) != 0)
            PyErr_Clear();
    }
done:
    PyMem_RawFree(fds);
    Py_XDECREF(values);
}

/* Marks the tasks that the callbacks ending the wait wake: the loop's ready callbacks (put
 * there by the wait's end, or by other threads), its due timers and the callbacks of its
 * ready descriptors. Returns how many tasks are woken. */
static size_t find_woken(task_list *list, double now) {
    PyObject *handles = PyList_New(0);
    PyObject *futures = imported("asyncio.futures"), *events = imported("asyncio.events");
    PyObject *base = imported("asyncio.base_events"), *collections = imported("collections");
    PyObject *functools = imported("functools");
    walk_types t = {0};
    chain_index x = {0};
    size_t woken = 0, size = 16;
    while (size < 4 * list->count) size *= 2;
    x.mask = size - 1;
    x.keys = PyMem_RawCalloc(size, sizeof(*x.keys));
    x.chains = PyMem_RawCalloc(size, sizeof(*x.chains));
    if (handles == NULL || x.keys == NULL || x.chains == NULL) goto done;
    for (size_t i = 0; i < list->count; i++) {
        index_put(&x, list->chains[i].task, 2 * i + 1);
        index_put(&x, list->chains[i].waiter, 2 * i);
    }
    PyObject *ready = loop_attribute(list->loop, "_ready");
    PyErr_Clear();
    PyObject *items = ready != NULL && !PyUnicode_Check(ready) ? PySequence_List(ready) : NULL;
    PyErr_Clear();
    for (Py_ssize_t i = 0; items != NULL && i < PyList_GET_SIZE(items) && i < MAX_HANDLES; i++)
        if (PyList_Append(handles, PyList_GET_ITEM(items, i)) != 0) PyErr_Clear();
    Py_XDECREF(items);
    Py_XDECREF(ready);
    due_timers(list->loop, handles, now);
    ready_descriptors(list->loop, handles);

    PyObject *held[6] = {futures != NULL ? PyObject_GetAttrString(futures, "Future") : NULL,
                         futures != NULL ? PyObject_GetAttrString(futures, "_PyFuture") : NULL,
                         events != NULL ? PyObject_GetAttrString(events, "AbstractEventLoop")
                                        : NULL,
                         base != NULL ? PyObject_GetAttrString(base, "Server") : NULL,
                         collections != NULL ? PyObject_GetAttrString(collections, "deque") : NULL,
                         functools != NULL ? PyObject_GetAttrString(functools, "partial") : NULL};
    PyErr_Clear();
    t = (walk_types){held[0], held[1], held[2], held[3], held[4], held[5]};
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(handles); i++)
        walk_handle(list, &x, &t, PyList_GET_ITEM(handles, i),
                    attribute_double(PyList_GET_ITEM(handles, i), "_when", now));
    for (size_t i = 0; i < sizeof(held) / sizeof(*held); i++) Py_XDECREF(held[i]);
    for (size_t i = 0; i < list->count; i++) woken += list->chains[i].woken;
done:
    PyMem_RawFree(x.keys);
    PyMem_RawFree(x.chains);
    Py_XDECREF(handles);
    Py_XDECREF(functools);
    Py_XDECREF(collections);
    Py_XDECREF(base);
    Py_XDECREF(events);
    Py_XDECREF(futures);
    PyErr_Clear();
    return woken;
}

static void release_tasks(task_list *list) {
    PyMem_RawFree(list->chains);
    Py_XDECREF(list->held);
    Py_XDECREF(list->loop);
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

static int by_due(const void *a, const void *b) {
    double x = (*(const task_chain *const *)a)->due, y = (*(const task_chain *const *)b)->due;
    return x < y ? -1 : x > y;
}

/* Charges the woken tasks (asyncwait.h's rule): the wait, from its start until end (the
 * monotonic time now), in the order the callbacks were due: the part until the earliest due
 * time to the tasks it woke, the part from there until the next to those the next woke, and
 * so on, the rest to the last; a callback other than a timer is due at the end. Returns what
 * was charged. Lock held. */
static uint64_t charge_woken_locked(const hl_loop_wait *wait, const task_list *list, size_t woken,
                                    double end) {
    HL_ASSERT_ENGINE_LOCKED();
    const task_chain **order = PyMem_RawMalloc(woken * sizeof(*order));
    if (order == NULL) return 0;
    size_t n = 0;
    for (size_t i = 0; i < list->count && n < woken; i++)
        if (list->chains[i].woken) order[n++] = &list->chains[i];
    qsort(order, n, sizeof(*order), by_due);
    double start = end - (double)wait->ns * 1e-9;
    uint64_t done = 0, charged = 0;
    for (size_t i = 0; i < n;) {
        size_t group = 1; /* the tasks due at the same time share their part */
        while (i + group < n && order[i + group]->due == order[i]->due) group++;
        double offset = (order[i]->due - start) * 1e9;
        uint64_t until = i + group == n               ? wait->ns
                         : offset <= (double)done     ? done
                         : offset >= (double)wait->ns ? wait->ns
                                                      : (uint64_t)offset;
        uint64_t part = until - done, share = part / group, left = part;
        for (size_t k = 0; k < group; k++) {
            uint64_t ns = k + 1 == group ? left : share;
            left -= ns;
            if (ns != 0 && charge_task_locked(wait, order[i + k], ns) == 0) charged += ns;
        }
        done = until;
        i += group;
    }
    PyMem_RawFree(order);
    return charged;
}

/* Charges the wait (asyncwait.h's rule): to the woken tasks when the wait's end was traced to
 * tasks, else split among those that wait on something other than tasks, else among all.
 * Lock held. */
static void charge_locked(const hl_loop_wait *wait, const task_list *list, size_t woken,
                          double end) {
    HL_ASSERT_ENGINE_LOCKED();
    uint64_t charged = 0;
    if (woken != 0) {
        charged = charge_woken_locked(wait, list, woken, end);
        results.woken_ns += charged;
    } else {
        size_t sharing = 0;
        for (size_t i = 0; i < list->count; i++) sharing += !list->chains[i].waits_on_tasks;
        int all = sharing == 0; /* every task waits on tasks: they all share */
        if (all) sharing = list->count;
        if (sharing == 0) {
            hl_engine_charge_loop_wait_locked(wait);
            return;
        }
        uint64_t share = wait->ns / sharing, left = wait->ns;
        for (size_t i = 0, n = 0; i < list->count; i++) {
            const task_chain *chain = &list->chains[i];
            if (!all && chain->waits_on_tasks) continue;
            uint64_t ns = ++n == sharing ? left : share; /* the last share takes the remainder */
            left -= ns;
            if (charge_task_locked(wait, chain, ns) == 0) charged += ns;
        }
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
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts); /* the default loop's time(): time.monotonic() */
    double now = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
    size_t woken = found ? find_woken(&list, now) : 0;
    hl_engine_lock();
    if (found) charge_locked(&wait, &list, woken, now);
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
