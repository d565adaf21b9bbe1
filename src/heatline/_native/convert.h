/* convert.h: the engine's results as Python objects, for the binding (module.c): the snapshot
 * dict whose shape docs/engine-api.md documents, the test hooks' stack, and heatline dump's
 * reading of another process.
 *
 * Each is called between hl_engine_snapshot_begin and hl_engine_snapshot_end (engine.h), with
 * the GIL held, and reads the tables through the view the engine filled.
 */
#ifndef HEATLINE_CONVERT_H
#define HEATLINE_CONVERT_H

#include <Python.h> /* its includer includes it first, as CPython requires */

#include "engine.h"

/* The snapshot dict: a new reference, or NULL with an exception set. */
PyObject *hl_convert_snapshot_locked(const hl_snapshot *view);

/* The labels' results (hl_engine_labels_begin) as the dict engine/labels.py reads:
 * {"nodes": [(parent or None, name id, count, wall ns, slices dropped)], "open": entries open,
 *  "charges": [(python, native, system, cpu_wait ns)] indexed by node,
 *  "lines": [(node, file id, line, ns)], "slices": [(node, thread id, start ns, end ns)],
 *  "origin_ns" (the session's start)}: a new reference, or NULL with an exception set. */
PyObject *hl_convert_labels_locked(const hl_labels_view *view);

/* frames[0..depth) (innermost first, from hl_engine_walk_locked) as a list of (filename, qualname,
 * line, user) tuples: a new reference, or NULL with an exception set. */
PyObject *hl_convert_stack_locked(const hl_snapshot *view, const hl_frame *frames, int depth);

/* heatline dump's result (hl_engine_dump) as the dict engine/dump.py reads: a new reference, or
 * NULL with an exception set. Needs the GIL only. */
PyObject *hl_convert_dump(const hl_dump *dump);
/* A reader's sample (remote.h): the dump's fields a reading has, frames as (function id,
 * line); and the reader's functions from id first on, as (file, name, qualname, first line). */
PyObject *hl_convert_remote_sample(const hl_dump *dump);
PyObject *hl_convert_remote_functions(const hl_stats *names, size_t first);

/* heatline attach's injection result (hl_engine_inject) as the dict engine/attach.py reads: a new
 * reference, or NULL with an exception set. */
PyObject *hl_convert_inject(const hl_inject_result *result);

#endif
