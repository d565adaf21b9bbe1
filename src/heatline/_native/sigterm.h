/* sigterm.h: make sure a Python-level SIGTERM handler gets to run.
 *
 * CPython runs a Python signal handler only when the main thread next checks for signals. A
 * SIGTERM that arrives between a blocking call's last check and the call itself (a
 * multiprocessing worker entering sem_wait() just as pool.terminate() signals it) is noted
 * and then waits until something else wakes the thread: for an idle pool worker, forever,
 * where python alone dies at once. heatline writes a profiled child's profile from such a
 * handler (run/sigterm.py), so it chains a C handler in front of Python's that notes the
 * signal, and the sampler thread signals the main thread again at each tick until Python's
 * handler has replaced the disposition (it sets SIG_IGN while it writes).
 *
 * The same C handler tells a SIGTERM the kernel delivered from one CPython only simulates:
 * _thread.interrupt_main(SIGTERM) (PyErr_SetInterruptEx) runs the Python handler without any
 * signal, and does nothing at all when the handler is SIG_DFL. heatline's guard stands in for
 * SIG_DFL, so its handler does nothing either when no SIGTERM came (hl_sigterm_delivered). */
#ifndef HEATLINE_SIGTERM_H
#define HEATLINE_SIGTERM_H

/* Called by the thread that installed Python's handler (the main thread), after it did.
 * Returns 0, or -1 when SIGTERM has no handler to chain. */
int hl_sigterm_chain(void);

/* Whether a SIGTERM reached ours since hl_sigterm_chain(), or ours is not installed (then
 * nothing can be told apart, and every call of Python's handler counts as a signal). */
int hl_sigterm_delivered(void);

/* Called by the sampler thread at every tick. */
void hl_sigterm_tick(void);

#endif
