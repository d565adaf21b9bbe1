/* periodic.h: --write-interval. Every period, the sampler thread asks the main thread to
 * run a Python callback (writing the profile so far) through Py_AddPendingCall: no thread the
 * program could see is made, and nothing runs in the program's threads but that one call at
 * a point where the interpreter runs its pending calls. The engine is paused while the
 * callback runs (and its previous state put back after), so neither the time nor the memory
 * it uses is charged to the program.
 */
#ifndef HEATLINE_PERIODIC_H
#define HEATLINE_PERIODIC_H

#include <stdint.h>

struct _object; /* PyObject: Python.h is not included here, so that an includer that defines
                 * _GNU_SOURCE before Python.h (3.9/3.10 pyconfig.h define it too) still can */

/* With the GIL: every write_interval_ns (0: never) from now, call callback() (None: never). */
void hl_periodic_set(uint64_t write_interval_ns, struct _object *callback);

/* The engine part (engine_part.h): its tick requests the call when it is due and the previous one
 * has run (no ticks, so no writes, while profiling is paused); its stop clears the callback. */

#endif
