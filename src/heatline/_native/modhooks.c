/* modhooks.c: torch's module forward hooks in C (modhooks.h). */
#include "modhooks.h"

#include <stdint.h>
#include <stdlib.h>

/* As deep as the engine records labels (labels.h); deeper entries are not recorded. */
#define DEPTH 256

typedef struct {
    uint64_t token;
    PyObject *paths; /* owned: the table the entry was found in */
    const void *module;
} entry;

typedef struct {
    int depth;
    int unrecorded; /* entries past the stack's size, closed before any recorded one */
    entry entries[DEPTH];
} stack;

static PyObject *resolver; /* owned; NULL: off */
static hl_modhooks_push_fn push;
static hl_modhooks_pop_fn pop;
static __thread stack *mine;

void hl_modhooks_set(PyObject *callable, hl_modhooks_push_fn push_fn, hl_modhooks_pop_fn pop_fn) {
    PyObject *old = resolver;
    resolver = NULL;
    push = push_fn;
    pop = pop_fn;
    if (callable != NULL && callable != Py_None && push_fn != NULL && pop_fn != NULL) {
        Py_INCREF(callable);
        resolver = callable;
    }
    Py_XDECREF(old);
}

static stack *my_stack(void) {
    if (mine == NULL) mine = calloc(1, sizeof(stack));
    return mine;
}

/* The label id of module in paths (borrowed table), or -1 (error cleared). */
static long label_in(PyObject *paths, PyObject *key) {
    if (paths == NULL || !PyDict_Check(paths)) return -1;
    PyObject *label = PyDict_GetItemWithError(paths, key);
    if (label == NULL) {
        PyErr_Clear();
        return -1;
    }
    long id = PyLong_AsLong(label);
    if (id < 0 || id > (long)UINT32_MAX) {
        PyErr_Clear();
        return -1;
    }
    return id;
}

void hl_modhooks_enter(PyObject *module) {
    stack *s = my_stack();
    if (s == NULL || resolver == NULL) return;
    if (s->depth >= DEPTH) {
        s->unrecorded++;
        return;
    }
    PyObject *key = PyLong_FromVoidPtr(module);
    if (key == NULL) {
        PyErr_Clear();
        return;
    }
    PyObject *paths = s->depth ? s->entries[s->depth - 1].paths : NULL;
    long id = label_in(paths, key);
    if (id >= 0) {
        Py_INCREF(paths);
    } else {
        /* a root of its own: the resolver may run Python code, which may enter modules */
        paths = PyObject_CallOneArg(resolver, module);
        id = label_in(paths, key);
        if (id < 0) {
            PyErr_Clear();
            Py_XDECREF(paths);
            Py_DECREF(key);
            return;
        }
        if (s->depth >= DEPTH) {
            s->unrecorded++;
            Py_DECREF(paths);
            Py_DECREF(key);
            return;
        }
    }
    Py_DECREF(key);
    entry *e = &s->entries[s->depth++];
    e->token = push((uint32_t)id);
    e->paths = paths;
    e->module = module;
}

void hl_modhooks_exit(PyObject *module) {
    stack *s = mine;
    if (s == NULL) return;
    if (s->unrecorded > 0) {
        s->unrecorded--;
        return;
    }
    int at = s->depth - 1;
    while (at >= 0 && s->entries[at].module != module) at--;
    if (at < 0) return; /* not open here (opened before the hooks, or on another thread) */
    while (s->depth > at) {
        entry *e = &s->entries[--s->depth];
        if (pop != NULL) pop(e->token);
        Py_DECREF(e->paths);
    }
}
