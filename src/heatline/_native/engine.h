/* engine.h: the engine room: the one engine of this process, its state, its lock and its
 * lifecycle (start, stop, pause, fork, reset) and the read side (snapshot).
 *
 * The engine is made of the sampler thread (sampler.c, the tick), which charges time, and of
 * parts that charge into the same tables: the memory part (memory.c, memhooks.c, livetable.c)
 * and the GPU part (gpu.c). The engine calls the parts at its lifecycle points through
 * hl_engine_part (a new part adds one to the list in engine.c); the parts call the engine only
 * through the narrow functions at the end of this file. The Python binding (module.c) calls the
 * engine through this header only (it includes memory.h and gpu.h for their results' types).
 */
#ifndef HEATLINE_ENGINE_H
#define HEATLINE_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "frames.h"
#include "scope.h" /* hl_config.scope: which files are user code */
#include "stats.h"

typedef struct hl_config {
    uint64_t interval_ns;      /* mean time between ticks; 0: 10 ms */
    long main_native_id;
    int paused;
    hl_scope scope;            /* ownership moves to the engine */
    uint8_t opcode_flags[256]; /* HL_OP_* flags per opcode (frames.h) */
    uint64_t memory_window;    /* bytes between memory samples on average; 0: no memory */
    int gpu_mode;              /* enum hl_gpu_mode (gpu.h) */
    /* heatline ctl's command and state files (control.h), or NULL: read during
     * hl_engine_start only (the control part copies them). */
    const char *control_command, *control_state;
} hl_config;

/* ---- the lifecycle (called by module.c) --------------------------------------------------- */

/* Starts sampling, then the parts that start with the GIL (memory). The caller holds the GIL
 * (the layout is read from the interpreter). Takes ownership of config->scope in every case.
 * Returns 0, -EBUSY if already running, or another -errno if the thread or a part could not
 * be started (the engine is then stopped). */
int hl_engine_start(hl_config *config);

/* Then, with the GIL released: the parts that start without it (GPU). Never fails: what went
 * wrong is in the part's results. */
void hl_engine_start_released(void);

/* Stopping, in three steps: hl_engine_stop_released with the GIL released (the GPU part
 * flushes CUPTI's buffers, whose callbacks take the engine lock), then hl_engine_stop_parts
 * with the GIL held (the memory part puts the Python allocators back), then hl_engine_stop,
 * which joins the sampler thread; holding the GIL is not required for it (the sampler never
 * takes the GIL). Results stay readable. Each step is idempotent. */
void hl_engine_stop_released(void);
void hl_engine_stop_parts(void);
void hl_engine_stop(void);

void hl_engine_set_paused(int paused);

/* In the child of os.fork() (os.register_at_fork(after_in_child=...)), GIL held: if no session
 * runs in this process (the parent's was marked stopped at the fork), the parts take out what
 * they installed, so that a child that profiles nothing runs at its plain speed. */
void hl_engine_release_after_fork(void);

/* Returns once no tick is under way: after hl_engine_set_paused(1), nothing the program does
 * from then on is charged (a tick that had read the flag before could otherwise charge the
 * code that follows pause()). Do not call with the engine lock held. */
void hl_engine_wait_for_tick(void);

/* Whether a session is on. */
int hl_engine_running(void);

/* Around os.fork() (registered with os.register_at_fork by the shell): the sampler thread is
 * joined before the fork and started again in the parent after it, so that at the moment of
 * the fork the process has only the program's own threads. CPython 3.12+ counts the process's
 * threads right after fork() and warns when there is more than one; the profiled program must
 * not see that because of heatline (3.13+ counts them after the after_in_parent hooks, so
 * there the thread is started from a pending call: engine.c). Results are kept across. Call
 * with the GIL held. (fork() itself is handled by pthread_atfork handlers: the child has no
 * sampler thread.) */
void hl_engine_suspend_for_fork(void);
void hl_engine_resume_after_fork(void);

/* ---- reading results ---------------------------------------------------------------------- */

/* A thread's totals, as the snapshot reports them. */
typedef struct hl_thread_stat {
    long native_id;
    int main;
    uint64_t ns[HL_NCATEGORIES]; /* attributed to user lines */
    uint64_t unattributed_ns;
    uint64_t cpu_ns;
    uint64_t engine_wait_ns; /* blocked in a hook on the engine lock (hl_engine_lock_from_hook) */
} hl_thread_stat;

/* The engine's own figures, as the snapshot reports them. */
typedef struct hl_snapshot {
    uint64_t samples, sampled_ns, interval_ns, lost_ns;
    uint64_t max_gap_ns, max_tick_ns; /* the sampler's longest gap and longest tick */
    int shared_descriptors; /* the sampler opened files in the program's descriptor table */
    const hl_stats *stats;  /* files, functions, lines, stacks */
    size_t nthreads;       /* read each with hl_engine_thread_stat */
} hl_snapshot;

/* Takes the engine lock and fills *view; the results (the parts' too: memory.h, gpu.h) stay
 * still until hl_engine_snapshot_end. The calling thread's own allocations are not sampled
 * meanwhile. */
void hl_engine_snapshot_begin(hl_snapshot *view);
void hl_engine_thread_stat(size_t index, hl_thread_stat *out);
void hl_engine_snapshot_end(void);

/* Test hooks, with the GIL held: what the engine's own walker reads. Both return -EBUSY while
 * a session is on (the walker is then the sampler's), -EFAULT if the code object or the stack
 * could not be read. hl_engine_line_of: the line of a byte offset in a code object.
 * hl_engine_walk, between hl_engine_snapshot_begin and _end: writes tstate's stack to frames
 * (innermost first; their ids resolve in the snapshot's stats) and returns its depth. */
int hl_engine_line_of(uintptr_t code, int offset, int *line);
int hl_engine_walk(uintptr_t tstate, hl_frame *frames, int max_depth);

/* ---- the parts ------------------------------------------------------------------------------ */

/* A part of the engine: what it does at each lifecycle point. Any function may be NULL. */
typedef struct hl_engine_part {
    /* With the GIL held and the engine lock NOT held, right after the thread started; 0 or
     * -errno (the session then stops). */
    int (*start)(const hl_config *config);
    /* With the GIL released, after every part's start. */
    void (*start_released)(const hl_config *config);
    void (*stop_released)(void); /* GIL released, lock not held */
    void (*stop)(void);          /* GIL held, lock not held */
    void (*reset)(void);         /* lock held: forget results before the tables are cleared */
    void (*tick)(uint64_t now_ns); /* the sampler thread, at every tick, lock held */
    void (*wake)(uint64_t now_ns); /* the sampler thread, at every wake-up (paused or not),
                                    * before the tick, lock held */
    void (*after_fork_child)(void); /* in the child of fork(): the part records nothing there */
    /* Around os.fork(), GIL held, lock not held (hl_engine_suspend_for_fork): a thread of the
     * part's own is joined before the fork and started again in the parent after it, with the
     * sampler thread. */
    void (*suspend_for_fork)(void);
    void (*resume_after_fork)(void);
    /* In the child of fork(), GIL held, once the interpreter is usable again, when no session
     * is running there: take out what the part installed (the child runs as without it). */
    void (*release_after_fork)(void);
    /* Marks the calling thread as working inside the engine (nests): see hl_engine_lock. */
    void (*enter)(void);
    void (*leave)(void);
} hl_engine_part;

/* The parts, in the order they start (defined in their rooms). */
extern const hl_engine_part hl_memory_part; /* memory.c */
extern const hl_engine_part hl_gpu_part;    /* gpu.c */
extern const hl_engine_part hl_control_part; /* control.c: heatline ctl, the on/off record */
extern const hl_engine_part hl_periodic_part; /* periodic.c (--profile-interval) */

/* ---- what the parts may call ---------------------------------------------------------------- */

/* Serialise with the sampler (and the other parts) to read or charge results. The calling
 * thread is marked as inside the engine meanwhile: its own allocations are not sampled (the
 * hooks would take the lock again). */
void hl_engine_lock(void);
void hl_engine_unlock(void);

/* The lock taken from inside an allocation hook, whose thread is already marked. A thread that
 * waits here while the sampler holds the lock (during a tick) would look blocked to that very
 * tick, and its time would be charged as system time: the profiler's own doing. Such a thread
 * announces itself first, and the sampler classifies it by what it was doing. */
void hl_engine_lock_from_hook(void);
void hl_engine_unlock_from_hook(void);

/* Whether pause() is in effect. Lock-free. */
int hl_engine_paused(void);

/* After pthread_join() of a part's own thread with kernel id tid, before a fork: returns once the
 * process no longer counts it (100 ms at most), as the sampler's join does (sampler.c). */
void hl_engine_wait_until_gone(int tid);

/* The engine's tables (lock held). */
hl_stats *hl_engine_stats(void);

/* The line id of the calling thread's innermost user frame (HL_NO_LINE if none), read with the
 * engine's walker: the thread's own stack with plain loads, no GIL needed. A thread without a
 * Python thread state (a BLAS or OpenMP worker, a CUDA callback thread) is charged to the line
 * the main thread is on. Lock held. */
uint32_t hl_engine_current_line(void);

#endif
