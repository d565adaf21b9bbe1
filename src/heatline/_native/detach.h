/* detach.h: heatline attach's stop, watched by the engine's own sampler thread. An attached
 * profile (run/attached.py) ends when the attacher writes DIRECTORY/stop, or when its
 * DIRECTORY/request is gone (the attacher gave up or died and its directory was removed). The
 * sampler looks for either at its wake-ups (every 20 ms at most, paused or not); once one is
 * seen it starts one short-lived thread, all signals blocked, that takes the GIL as a new
 * thread does (PyGILState_Ensure), calls the callback (which stops the profile and writes it),
 * and ends. So no thread of heatline's but the sampler lives while attached: the sampler is
 * suspended around os.fork() (engine.c), and CPython 3.12+, which counts the process's threads
 * at a fork and warns when there is more than one, sees only the program's.
 */
#ifndef HEATLINE_DETACH_H
#define HEATLINE_DETACH_H

struct _object; /* PyObject, as in periodic.h */

/* With the GIL, while the engine runs: call callback() on a thread of its own once
 * stop_path exists or request_path does not (callback None: watch nothing). Returns 0, or
 * -ENAMETOOLONG. Cleared by the engine's stop. */
int hl_detach_watch(const char *stop_path, const char *request_path, struct _object *callback);

#endif
