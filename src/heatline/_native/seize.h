/* seize.h: stopping another process's threads for a moment, and letting them go again, so that
 * heatline dump reads stacks that do not change under it.
 *
 * Each thread is attached with PTRACE_SEIZE (which, unlike PTRACE_ATTACH, sends no SIGSTOP the
 * process could see) and stopped with PTRACE_INTERRUPT; a thread blocked in a system call is
 * stopped too, and its call is restarted when it is let go, as after a signal without a handler.
 * The thread list is read again until no new thread appears (a thread may start one while the
 * others are being stopped). PTRACE_DETACH lets them go; a signal that arrived while a thread
 * was stopped is handed back to it then. A thread that exits meanwhile (the process ending) is
 * waited for, as its tracer must, so that its parent can reap the process. Should heatline die
 * in between, the kernel detaches them all as it exits.
 *
 * A thread that does not stop within the deadline (asleep in the kernel uninterruptibly, state
 * D, for longer than that) is read while it runs: its stack may be torn, which the walk
 * reports.
 */
#ifndef HEATLINE_SEIZE_H
#define HEATLINE_SEIZE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct hl_seized_thread {
    pid_t tid;
    int stopped;    /* in a ptrace stop now */
    int pass_on;    /* a signal it stopped for, to deliver when let go (0: none) */
} hl_seized_thread;

typedef struct hl_seized {
    pid_t pid;
    int parent; /* heatline is the process's parent too */
    hl_seized_thread *threads;
    size_t count, capacity;
    uint64_t first_stop_ns; /* when the first thread was asked to stop (CLOCK_MONOTONIC) */
    uint64_t released_ns;   /* when the last one was let go */
} hl_seized;

/* Stops every thread of process pid, waiting at most timeout_ns for them to stop. Returns 0
 * (see hl_seize_stopped for how many did), or -errno when even the first thread could not be
 * seized: EPERM (ptrace refused, or the process is traced already), ESRCH (no such process);
 * nothing is left seized then. */
int hl_seize(pid_t pid, hl_seized *s, uint64_t timeout_ns);

/* How many threads hl_seize stopped, and whether thread tid is one of them. */
size_t hl_seize_stopped(const hl_seized *s);
int hl_seize_is_stopped(const hl_seized *s, pid_t tid);

/* Lets every seized thread go (waiting up to timeout_ns for the ones not stopped yet, which
 * cannot be detached before they stop) and frees *s. A thread still not stopped then stays
 * attached until heatline exits. */
void hl_seize_release(hl_seized *s, uint64_t timeout_ns);

#endif
