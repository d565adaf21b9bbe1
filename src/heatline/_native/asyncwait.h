/* asyncwait.h: the time an asyncio event loop waits, charged to the awaits its tasks are
 * suspended at.
 *
 * While a program's event loop has nothing to run, its thread blocks in the selector
 * (epoll_wait under BaseEventLoop._run_once, or inside uvloop's C loop under asyncio.run). A
 * stack sampler sees that thread blocked under `asyncio.run(main())` and charges the wait there,
 * which tells the user nothing: the program is waiting on some `await`. Which ones cannot be
 * read off the loop thread's stack, since suspended coroutines are not on any stack; they hang
 * off the loop's tasks.
 *
 * Nothing on the loop thread runs while it waits, so the set of suspended tasks and the await
 * each is suspended at stay as they were for the whole wait, until the wait returns and the
 * loop runs their callbacks. The sampler (sampler.c) therefore holds back the main thread's
 * samples taken in such a wait (loopwait.h) and asks, by a pending call, for this part to run on
 * the main thread: CPython runs pending calls at its next check of the eval breaker after the
 * wait returns, which is within the loop's own code (the selector's and _run_once's) before any
 * task's callback runs, since those are reached through Python calls that check it first. There,
 * with the GIL, this part reads the tasks through the C API alone (no Python code of asyncio or
 * of the program is called): the running loop's pending tasks from asyncio's task registries,
 * each one's coroutine and the chain of coroutines it awaits (cr_await/gi_yieldfrom), and each
 * suspended frame's line through the engine's walker, so the functions and lines are the ones
 * the sampler records when those coroutines run.
 *
 * The rule for several suspended tasks: a wait belongs to the awaits whose timer or I/O ended
 * it. When the call runs, the callbacks that end the wait are the loop's: its ready callbacks
 * (added by the wait's end, or by other threads), its timers now due, and the callbacks of the
 * selector's descriptors that are ready now (level-triggered: still ready until the callbacks
 * read or write them). From each callback and its arguments, a bounded walk through the objects
 * they reach (bound methods' objects, containers, weak references, functools.partial, instance
 * dictionaries; not the loop, a server, or into a future) finds the tasks woken: a task whose
 * awaited future (_fut_waiter) is met, or a task met within two steps of the callback. Those
 * get the wait in the order their callbacks were due (a timer at its time, others at the
 * wait's end): the part until the earliest to the first, and so on, the rest to the last
 * (a loop waking late finds several timers due at once). When none is found (a loop written in C, a callback reaching no task), the wait is split evenly among
 * the tasks that wait on something other than tasks: a task awaiting another Task, a gather(),
 * asyncio.wait(), wait_for() or a TaskGroup's end gets none of it itself (the tasks it waits
 * for carry it); if every task waits on tasks, they share it evenly. Each share is system time,
 * charged to the innermost user frame of the task's coroutine chain (its await line), with the
 * stack of the loop thread down to the event loop's frame followed by the task's coroutines. A
 * wait with no task found goes back to where it was sampled, as does a wait still held back
 * at a snapshot. Loops on other threads than the main one are charged as before: pending calls
 * only ever run on the main thread (the profile counts that time, data/build.py warns).
 */
#ifndef HEATLINE_ASYNCWAIT_H
#define HEATLINE_ASYNCWAIT_H

#include <stdint.h>

/* The sampler thread, lock held, after holding back a wait of the main thread: asks the main
 * thread to charge it, by a pending call (one at a time). */
void hl_asyncwait_request(void);

/* What the part did (lock held): the time charged to awaits, and how many waits. */
typedef struct hl_asyncwait_results {
    uint64_t await_ns;
    uint64_t woken_ns; /* the part of await_ns charged to the tasks the wait's end woke */
    uint64_t waits;
} hl_asyncwait_results;

void hl_asyncwait_results_get_locked(hl_asyncwait_results *out);

#endif
