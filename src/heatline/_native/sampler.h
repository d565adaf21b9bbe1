/* sampler.h: the sampling engine: one background thread that periodically charges every
 * Python thread's time to the line it is executing, as Python, native or system time.
 *
 * See the block comment at the top of sampler.c for how each sample is classified, and
 * docs/design.md for why the engine samples from its own thread instead of using signals.
 */
#ifndef HEATLINE_SAMPLER_H
#define HEATLINE_SAMPLER_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "frames.h"
#include "stats.h"

typedef struct hl_thread {
    uintptr_t tstate;   /* its PyThreadState (only compared and read via hl_memread) */
    long native_id;     /* the kernel's thread id */
    clockid_t clock;    /* its CPU-time clock */
    int main;
    int alive;          /* present in the interpreter's thread list at the latest scan */
    uint64_t last_cpu_ns;
    int has_last_cpu;
    uint64_t ns[HL_NCATEGORIES]; /* attributed to user lines */
    uint64_t unattributed_ns;    /* sampled while no user frame was on its stack */
    uint64_t cpu_ns;             /* CPU time measured between its samples */
    hl_frame last_user;          /* the user line its latest readable sample was charged to */
    int has_last_user;
} hl_thread;

typedef struct hl_config {
    uint64_t interval_ns;
    long main_native_id;
    int paused;
    hl_scope scope;            /* ownership moves to the engine */
    uint8_t opcode_flags[256]; /* HL_OP_* flags per opcode (frames.h) */
    uint64_t memory_window;    /* bytes between memory samples on average; 0: no memory */
} hl_config;

/* The engine's state. Fields below `lock` are protected by it: the sampler holds it while it
 * samples, readers (hl_engine_lock) while they copy results out. */
typedef struct hl_engine {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    pthread_t thread;
    int running;        /* a session is on (changed only by start/stop/fork child) */
    int suspended;      /* running, but the thread is stopped around a fork() (see below) */
    int stop_requested;
    int paused;         /* read by the sampler at each tick; written atomically */

    uint64_t interval_ns;
    long main_native_id;
    uint64_t rng;
    hl_walker walker;
    hl_stats stats;
    hl_thread *threads;
    size_t nthreads, threads_capacity;
    long pthread_tid_offset; /* 3.9/3.10: where glibc keeps the kernel id, or -1 */

    uint64_t samples;    /* ticks that charged time */
    uint64_t sampled_ns; /* wall time those ticks covered */
    uint64_t lost_ns;    /* thread time whose stack could not be read */
} hl_engine;

/* CLOCK_MONOTONIC in nanoseconds: the engine's one clock, for ticks and memory events. */
uint64_t hl_now_ns(void);

/* The one engine of this process. */
extern hl_engine hl_the_engine;

/* Starts sampling. The caller holds the GIL (the layout is read from the interpreter).
 * Takes ownership of config->scope in every case. Returns 0, -EBUSY if already running, or
 * another -errno if the thread could not be started. */
int hl_engine_start(hl_config *config);

/* Stops and joins the sampler thread; results stay readable. Holding the GIL is not required
 * (the sampler never takes the GIL), but memory sampling must have been stopped first, with
 * the GIL held (hl_memory_stop). Idempotent. */
void hl_engine_stop(void);

void hl_engine_set_paused(int paused);

/* Around os.fork() (registered with os.register_at_fork by the shell): the sampler thread is
 * joined before the fork and started again in the parent after it, so that at the moment of
 * the fork the process has only the program's own threads. CPython 3.12+ counts the process's
 * threads right after fork() and warns when there is more than one; the profiled program must
 * not see that because of heatline. Results are kept across. Call with the GIL held. */
void hl_engine_suspend_for_fork(void);
void hl_engine_resume_after_fork(void);

/* Serialise with the sampler (and the memory hooks) to read results. The calling thread's own
 * allocations are not sampled while it holds the lock. */
void hl_engine_lock(void);
void hl_engine_unlock(void);

/* Prepares the walker's layout for the test hooks without starting the thread. */
void hl_engine_prepare_walker(void);

#endif
