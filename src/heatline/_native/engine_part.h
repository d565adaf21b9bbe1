/* engine_part.h: the engine's interface to its parts: the session's settings they start with
 * (hl_config), the lifecycle points each part implements (hl_engine_part), and the narrow set
 * of engine functions a part may call (the lock, the tables, the line a thread is on, the
 * pause flag).
 *
 * The parts (memory.c, gpu.c, control.c, periodic.c, and the files they are made of) include
 * this header and never engine.h, which is the binding's: engine.c, which implements both, may
 * then include the parts' own headers to serve the binding (engine.h) without an include
 * cycle. engine.h includes this header, so what is declared here is the binding's too: it
 * builds an hl_config, and pause() calls hl_engine_wait_for_tick.
 */
#ifndef HEATLINE_ENGINE_PART_H
#define HEATLINE_ENGINE_PART_H

#include <stddef.h>
#include <stdint.h>

#include "debug.h"
#include "loopwait.h" /* hl_loop_wait: an event loop's wait held back (asyncwait.c) */
#include "scope.h"    /* hl_config.scope: which files are user code */
#include "stats.h"

typedef struct hl_config {
    uint64_t sampling_interval_ns; /* mean time between ticks (> 0) */
    long main_native_id;
    int paused;
    hl_scope scope;            /* ownership moves to the engine */
    uint8_t opcode_flags[256]; /* HL_OP_* flags per opcode (frames.h) */
    uint64_t
        memory_sampling_window_bytes; /* bytes between memory samples on average; 0: no memory */
    int gpu_mode; /* enum hl_gpu_mode (gpu.h) */
    int native;   /* native frames: which C functions native time went to (native.h) */
    /* heatline ctl's command and state files (control.h), or NULL: read during
     * hl_engine_start only (the control part copies them). */
    const char *control_command, *control_state;
} hl_config;

/* ---- the parts ------------------------------------------------------------------------------ */

/* A part of the engine: what it does at each lifecycle point. Any function may be NULL. */
typedef struct hl_engine_part {
    /* With the GIL held and the engine lock NOT held, right after the thread started; 0 or
     * -errno (the session then stops). */
    int (*start)(const hl_config *config);
    /* With the GIL released, after every part's start. */
    void (*start_released)(const hl_config *config);
    void (*stop_released)(void); /* GIL released, lock not held */
    void (*stop)(void); /* GIL held, lock not held */
    void (*reset)(void); /* lock held: forget results before the tables are cleared */
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
extern const hl_engine_part hl_gpu_part; /* gpu.c */
extern const hl_engine_part hl_control_part; /* control.c: heatline ctl, the on/off record */
extern const hl_engine_part hl_periodic_part; /* periodic.c (--write-interval) */
extern const hl_engine_part hl_asyncwait_part; /* asyncwait.c: event loop waits to awaits */
extern const hl_engine_part hl_detach_part;    /* detach.c: heatline attach's stop */
extern const hl_engine_part hl_newthreads_part; /* newthreads.c: new threads' names */

/* ---- what the parts may call ---------------------------------------------------------------- */

/* Serialise with the sampler (and the other parts) to read or charge results. The calling
 * thread is marked as inside the engine meanwhile: its own allocations are not sampled (the
 * hooks would take the lock again). The lock does not nest. Functions named *_locked are called
 * with it held and never take it (engine.h, "Lock contracts"). */
void hl_engine_lock(void);
void hl_engine_unlock(void);

/* In debug builds (debug.h) the lock records its holder: HL_ASSERT_ENGINE_LOCKED() checks that
 * the calling thread holds it, as every *_locked function does on entry. Compiled out of
 * release builds. */
#if HL_DEBUG
int hl_engine_lock_held(void);
#define HL_ASSERT_ENGINE_LOCKED() HL_ASSERT(hl_engine_lock_held())
#else
#define HL_ASSERT_ENGINE_LOCKED() ((void)0)
#endif

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

/* Sets the pause flag itself, unrecorded: the on/off record's own (control.c), and a write of
 * the profile that must not be charged (periodic.c). Lock-free. */
void hl_engine_set_paused(int paused);

/* Returns once no tick is under way: after hl_engine_set_paused(1), nothing the program does
 * from then on is charged (a tick that had read the flag before could otherwise charge the
 * code that follows pause()). Do not call with the engine lock held. */
void hl_engine_wait_for_tick(void);

/* How many threads with a Python thread state the sampler has seen so far (it only grows while
 * the session runs). Lock held. */
size_t hl_engine_threads_seen_locked(void);

/* The engine's tables (lock held). */
hl_stats *hl_engine_stats_locked(void);

/* The line id of the calling thread's innermost user frame (HL_NO_LINE if none), read with the
 * engine's walker: the thread's own stack with plain loads, no GIL needed. A thread without a
 * Python thread state (a BLAS or OpenMP worker, a CUDA callback thread) is charged to the line
 * the main thread is on. Lock held. */
uint32_t hl_engine_current_line_locked(void);

/* From the sampler thread: asks the main thread to run call(NULL) at its next check of the
 * eval breaker (Py_AddPendingCall), one request at a time: *requested is set until call
 * resets it. A request still pending nudges the main thread again
 * (hl_compat_notice_pending_calls). Lock-free; needs no GIL. */
void hl_engine_request_pending_call(int *requested, int (*call)(void *));

/* Marks the calling thread as working inside the engine without taking the lock (nests, as
 * hl_engine_lock's mark does): its allocations are not sampled meanwhile. */
void hl_engine_enter(void);
void hl_engine_leave(void);

/* The calling thread's event loop wait held back by the sampler (loopwait.h), taken from it:
 * 1 with *out filled, 0 if there is none. Lock held. */
int hl_engine_take_loop_wait_locked(hl_loop_wait *out);

/* Charges a wait taken with hl_engine_take_loop_wait_locked where the sampler would have:
 * the line and stack it was sampled at. Lock held. */
void hl_engine_charge_loop_wait_locked(const hl_loop_wait *wait);

/* A suspended generator's or coroutine's frame at address (compat.h,
 * hl_compat_suspended_frame), read with the engine's walker: 0 with *out set, or -1. The
 * calling thread holds the GIL and a reference to the object. Lock held. */
int hl_engine_frame_at_locked(uintptr_t address, hl_frame *out);

#endif
