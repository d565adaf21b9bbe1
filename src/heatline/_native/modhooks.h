/* modhooks.h: torch's global module forward hooks, in C (engine/torch_labels.py installs them).
 *
 * Each nn.Module call runs a pre-hook and a forward hook; written in Python they cost more than
 * a small layer's own forward. Here each thread keeps its stack of open module entries (the
 * label token, the root's table of paths, the module), and a module is found in the table of
 * the innermost open root: an id() lookup in a dict and a label push, with no Python frame.
 * A module that is not in that table (a root, or a module of another model) is looked up by
 * the shell's resolver: resolver(module) -> {id(submodule): label id}, the paths of the model
 * rooted at it.
 *
 * A forward hook closes its module's entry and any entries of its submodules left open above
 * it. Nothing here raises into the program: a failure leaves that module unlabelled.
 * A thread's stack holds references to the tables of its open roots; a thread that ends with
 * entries open leaves them (a few dicts) to the process.
 */
#ifndef HEATLINE_MODHOOKS_H
#define HEATLINE_MODHOOKS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>

/* How an entry is opened and closed (the engine's label push and pop, which the binding
 * passes: this room does not see the engine). */
typedef uint64_t (*hl_modhooks_push_fn)(uint32_t name);
typedef int (*hl_modhooks_pop_fn)(uint64_t token);

/* Sets the resolver (a callable; NULL or None: the hooks do nothing) and the label calls. */
void hl_modhooks_set(PyObject *resolver, hl_modhooks_push_fn push, hl_modhooks_pop_fn pop);
/* The hooks' bodies: the module called. */
void hl_modhooks_enter(PyObject *module);
void hl_modhooks_exit(PyObject *module);

#endif
