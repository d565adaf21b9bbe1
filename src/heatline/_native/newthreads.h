/* newthreads.h: a Python callback run when the sampler has seen new threads, so that the
 * shell reads their names (threading's Thread.name, the kernel's comm) while they live: a
 * thread may end, and its Thread object go, long before the profile is built. As periodic.c's
 * writes, the call is asked of the main thread through Py_AddPendingCall (no thread the program
 * could see is made), one at a time; unlike them, without pausing the engine (newthreads.c).
 * The kernel's names the sampler reads itself, when it first sees a thread (sampler.c).
 */
#ifndef HEATLINE_NEWTHREADS_H
#define HEATLINE_NEWTHREADS_H

struct _object; /* PyObject, as in periodic.h */

/* With the GIL: call callback() in the main thread after a tick that saw threads it had not
 * seen before, and again after the next tick while it returns true (a thread it could not
 * name yet: still starting); None: never. Cleared by the engine's stop. */
void hl_newthreads_set(struct _object *callback);

#endif
