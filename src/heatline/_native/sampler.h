/* sampler.h: the tick: one background thread that periodically charges every Python thread's
 * time to the line it is executing, as Python, native or system time.
 *
 * The sampler knows nothing of the engine around it: the engine (engine.c) owns its state,
 * hands it the lock, the tables and three callbacks, and starts and joins the thread. See the
 * block comment at the top of sampler.c for how each sample is classified, and docs/design-engine.md
 * for why the engine samples from its own thread instead of using signals.
 */
#ifndef HEATLINE_SAMPLER_H
#define HEATLINE_SAMPLER_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "frames.h"
#include "lock.h"
#include "loopwait.h"
#include "native.h"
#include "stats.h"

/* schedstat_error when the kernel reports no run-queue waits (sched_info off: "0 0 0"). */
#define HL_SCHEDSTAT_ZEROS (-1)

/* One entry of the thread registry: an OS thread that runs Python code. */
typedef struct hl_thread {
    uintptr_t tstate;   /* its PyThreadState (only compared and read via hl_memread) */
    long native_id;     /* the kernel's thread id */
    char comm[16];      /* the kernel's name for it when first seen ("": unread) */
    clockid_t clock;    /* its CPU-time clock */
    int main;
    int alive;          /* present in the interpreter's thread list at the latest scan */
    uint64_t last_cpu_ns;
    int has_last_cpu;
    int was_waiting; /* its latest sample was charged as blocked (system) */
    uint64_t ns[HL_NCATEGORIES]; /* attributed to user lines */
    uint64_t unattributed_ns;    /* sampled while no user frame was on its stack */
    uint64_t cpu_ns;             /* CPU time measured between its samples */
    uint64_t engine_wait_ns;     /* spent in an allocation hook waiting for the engine lock */
    hl_frame last_user;          /* the user line its latest readable sample was charged to */
    int has_last_user;
    hl_loop_wait *loop_wait;     /* the main thread's event loop wait held back (NULL: never) */
    hl_native_thread native;     /* its native-frames event (native.h) */
    int stat_fd; /* its /proc stat file, kept open in the sampler's own table, or -1 (sampler.c) */
    int schedstat_fd; /* its /proc schedstat file, kept as stat_fd is, or -1 */
    int has_run_delay;
    int started_since; /* first seen after the session's first tick: started since (sampler.c) */
    uint64_t run_delay_ns; /* its run-queue wait as schedstat last read it */
    uint64_t cpu_wait_due_ns; /* run-queue wait measured and not charged yet (sampler.c) */
    /* What its samples charged, per category, while it had not run since the sample before:
     * to one cell and one stack (its stack cannot change without running), until it runs and
     * its measured wait is moved out of it (sampler.c, "Waiting for a CPU"). */
    uint64_t unrun_ns[HL_NCATEGORIES];
    int64_t unrun_cell; /* -1: none */
    uint32_t unrun_stack;
    uint32_t unrun_label; /* the label (labels.h) those samples charged too */
    uint32_t label_slot; /* where its label stack was found (hl_labels_innermost's hint) */
    /* Its latest complete stack, read after its CPU clock stood at last_cpu_ns: while the clock
     * stands still the thread has not run, so its stack is this one (sampler.c, "An idle
     * thread's stack"). memo holds memo_capacity frames; memo_valid 0: none to reuse. */
    hl_sampled_stack *memo;
    int memo_capacity;
    int memo_valid;
    uintptr_t memo_tstate;
} hl_thread;

/* The sampler's state, a part of the engine's (engine.c). The thread holds *lock while it
 * ticks; everything below `lock` is read and written under it.
 *
 * *lock is the engine lock, and every function below is called with it held: they are the
 * engine room's own helpers, never called from elsewhere, so that contract is stated here once
 * rather than with the _locked suffix the rest of the engine uses (engine.h). */
typedef struct hl_sampler {
    /* Set by the engine before hl_sampler_spawn. */
    hl_lock *lock;
    hl_stats *stats;
    uint64_t sampling_interval_ns;
    long main_native_id;
    void (*on_thread_start)(void); /* first thing in the new thread */
    void (*after_tick)(uint64_t now_ns); /* after each tick, lock held */
    void (*on_wake)(uint64_t now_ns); /* each wake-up, paused or not, lock held */
    int (*waiting_for_lock)(long native_id); /* waiting for *lock, so not blocked (engine_part.h) */
    void (*on_loop_wait)(void); /* after holding back the main thread's event loop wait, or NULL
                                 * to charge such waits where they are sampled (asyncwait.h) */

    pthread_t thread;
    int thread_tid; /* its kernel thread id, for hl_sampler_join */
    pthread_cond_t wake;
    int stop_requested;
    int paused; /* read at each tick; written atomically */

    uint64_t rng;
    hl_walker walker;
    hl_thread *threads;
    size_t nthreads, threads_capacity;
    uint8_t *seen; /* per thread, scratch of refresh_threads: its state in this tick's list */
    size_t seen_capacity;
    long pthread_tid_offset; /* 3.9/3.10: where glibc keeps the kernel id, or -1 */

    uint64_t samples; /* ticks that charged time */
    uint64_t sampled_ns; /* wall time those ticks covered */
    uint64_t lost_ns; /* thread time whose stack could not be read */
    uint64_t max_gap_ns; /* the longest time between two wake-ups (one sample's weight), the
                          * session's start and its stop counting as wake-ups */
    uint64_t started_ns; /* when the session started, until the thread's first tick */
    uint64_t max_tick_ns; /* the longest tick (the engine lock held throughout) */
    /* Ticks that came more than twice the interval after the wake-up before (the sampler held
     * up: not scheduled, or waiting for the lock), and the time they charged: each charged a
     * whole gap to one state read at its end, so a state the gap held only in part (a sleep
     * that began and ended within it) may have been charged that much. */
    uint64_t long_gaps, long_gap_ns;
    uint64_t stacks_reused; /* samples of a thread that had not run since its previous one,
                             * whose stack was that sample's, not read again (sampler.c) */
    /* Run-queue waits (sampler.c, "Waiting for a CPU"): 0 while measured, else why they are
     * not (an errno of opening schedstat, or HL_SCHEDSTAT_ZEROS); the thread whose file said so */
    int schedstat_error;
    long schedstat_tid;
    /* The waits before a thread's first read are no part of the session, except those since
     * the session started: the starting thread's total then (start_tid, start_run_delay_ns),
     * and all of a thread's when it was first seen after the first tick (it started since). */
    long start_tid;
    uint64_t start_run_delay_ns;
    int has_start_run_delay;
    int first_tick_done;
    int own_table; /* the running thread has a descriptor table of its own (sampler.c) */
    int shared_descriptors; /* the thread had to open files in the program's descriptor table
                             * (no table of its own: sampler.c) at a start of this session */
    uint8_t *function_kinds; /* per function id: what it is to an event loop (sampler.c) */
    size_t function_kinds_capacity;
    uint64_t loop_wait_ns; /* event loop waits of the main thread held back */
    uint64_t other_loop_wait_ns; /* event loop waits of other threads: charged as sampled */
} hl_sampler;

/* Prepares a session in the starting thread (lock held, GIL held): seeds the generator, creates
 * the wake-up condition, and on 3.9/3.10 scans the starting thread for glibc's kernel-id offset
 * (the thread finishes the scan). */
void hl_sampler_prepare(hl_sampler *s);

/* The live registry entry of a kernel thread id, or NULL (lock held). */
hl_thread *hl_sampler_find_thread(hl_sampler *s, long native_id);

/* Destroys what hl_sampler_prepare created, once the thread is joined (lock held). */
void hl_sampler_release(hl_sampler *s);

/* Starts the thread with every signal blocked in it. Returns 0 or -errno. Lock held. */
int hl_sampler_spawn(hl_sampler *s);

/* Asks the thread to finish and joins it. Called with *lock held; returns with it held (it is
 * released while joining). */
void hl_sampler_join(hl_sampler *s);

/* After pthread_join() of an engine thread with kernel id tid: waits (100 ms at most) until the
 * process no longer counts it, which is a little later (see sampler.c). */
void hl_sampler_wait_until_gone(int tid);

/* The held-back event loop wait of the thread native_id, taken from it: 1 with *out filled, 0
 * when it has none (lock held). */
int hl_sampler_take_loop_wait(hl_sampler *s, long native_id, hl_loop_wait *out);

/* Charges a held-back wait where it was sampled (lock held). */
void hl_sampler_charge_loop_wait(hl_sampler *s, const hl_loop_wait *wait);

/* Charges every wait still held back where it was sampled, before results are read (lock
 * held). */
void hl_sampler_flush_loop_waits(hl_sampler *s);

/* Forgets the thread registry and the counters (lock held, thread not running). */
void hl_sampler_reset(hl_sampler *s);

#endif
