/* engine.h: the engine room: the one engine of this process, its state, its lock and its
 * lifecycle (start, stop, pause, fork, reset) and the read side (snapshot), as the Python
 * binding (module.c, convert.c) sees it.
 *
 * The engine is made of the sampler thread (sampler.c, the tick), which charges time, and of
 * parts that charge into the same tables: the memory part (memory.c, memhooks.c, livetable.c),
 * the GPU part (gpu.c, nvml.c, cupti.c), heatline ctl's on/off control (control.c) and
 * --write-interval's writes (periodic.c). The engine calls the parts at its lifecycle points
 * through hl_engine_part, and the parts call the engine only through the narrow functions of
 * engine_part.h (a new part adds one to the list in engine.c). The binding calls the engine
 * through this header only: what it asks of a part (pause's record, the periodic callback,
 * SIGTERM's chaining, the parts' results) goes through an engine function that delegates.
 *
 * Lock contracts. One lock, the engine lock (hl_engine_lock, engine_part.h), guards the
 * engine's tables, the sampler's state and the parts' results. A function whose name ends in
 * _locked is called with it held by the calling thread and never takes it; a function without
 * the suffix either takes it itself, and so must not be called with it held (it does not
 * nest), or needs no lock (its comment says lock-free, or names the lock of its own it takes).
 * The sampler's functions (sampler.h), the engine room's private half, all run under the lock
 * and say so once there. Debug builds (debug.h: HEATLINE_DEBUG, which the ASan build sets)
 * check the contracts: the lock records its holder (lock.h), every _locked function checks it
 * on entry (HL_ASSERT_ENGINE_LOCKED) and taking it twice fails a check instead of hanging.
 * Release builds compile the checks out, so the tick and the allocation hooks pay nothing.
 */
#ifndef HEATLINE_ENGINE_H
#define HEATLINE_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "engine_part.h" /* hl_config, the lock */
#include "frames.h"
#include "gpu.h"    /* the GPU part's results, in the snapshot */
#include "inject.h" /* heatline attach's way in */
#include "labels.h" /* regions and modules */
#include "memory.h" /* the memory part's results, likewise */
#include "native.h" /* native frames' results, likewise */
#include "remote.h" /* heatline dump's results */
#include "stats.h"

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

/* pause() (1) and resume() (0) for the program (heatline.pause()/resume()): the flag, and the
 * change recorded for the profile's profiled periods (control.h). After a pause, call
 * hl_engine_wait_for_tick (engine_part.h) with the GIL released. */
void hl_engine_pause(int paused);

/* --write-interval: with the GIL, every write_interval_ns (0: never) from now, callback() is called
 * in the main thread, the engine paused meanwhile (periodic.h). */
struct _object; /* PyObject, as in periodic.h */
void hl_engine_set_periodic(uint64_t write_interval_ns, struct _object *callback);
/* With the GIL: call callback() in the main thread after a tick that saw new threads
 * (newthreads.h); None: never. */
void hl_engine_on_new_threads(struct _object *callback);

/* heatline attach: with the GIL, while running: callback() is called on a short-lived thread
 * of the engine's once stop_path exists or request_path does not (detach.h). 0 or -errno. */
int hl_engine_watch_detach(const char *stop_path, const char *request_path,
                           struct _object *callback);

/* After Python's SIGTERM handler is installed (by the main thread): chains a C handler in front
 * of it so that it runs even when the signal races a blocking call (sigterm.h). Returns 0, or
 * -1 when SIGTERM has no handler to chain. */
int hl_engine_chain_sigterm(void);

/* In Python's SIGTERM handler: whether the kernel delivered a SIGTERM since the last
 * hl_engine_chain_sigterm() (0: _thread.interrupt_main's simulation; sigterm.h). */
int hl_engine_sigterm_delivered(void);

/* A profiled child: write the status the process exits with to `path` once it exits
 * (exitstatus.h). Returns 0, or -1 when it cannot be recorded. */
int hl_engine_record_exit_status(const char *path);

/* In the child of os.fork() (os.register_at_fork(after_in_child=...)), GIL held: if no session
 * runs in this process (the parent's was marked stopped at the fork), the parts take out what
 * they installed, so that a child that profiles nothing runs at its plain speed. */
void hl_engine_release_after_fork(void);

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
    char comm[16]; /* the kernel's name for it when first seen ("": unread) */
    uint64_t ns[HL_NCATEGORIES]; /* attributed to user lines */
    uint64_t unattributed_ns;
    uint64_t cpu_ns;
    uint64_t engine_wait_ns; /* blocked in a hook on the engine lock (hl_engine_lock_from_hook) */
} hl_thread_stat;

/* The engine's own figures, as the snapshot reports them. */
typedef struct hl_snapshot {
    uint64_t samples, sampled_ns, sampling_interval_ns, lost_ns;
    uint64_t max_gap_ns, max_tick_ns; /* the sampler's longest gap and longest tick */
    uint64_t long_gaps, long_gap_ns; /* its ticks after gaps over twice the interval (sampler.h) */
    uint64_t stacks_reused; /* samples whose stack was the thread's previous one (sampler.h) */
    int shared_descriptors; /* the sampler opened files in the program's descriptor table */
    /* run-queue waits: 0 measured, else why not (an errno, or -1: schedstat reads zeros), and
     * the thread whose file said so (sampler.h) */
    int schedstat_error;
    long schedstat_tid;
    /* asyncio (asyncwait.h): the main thread's event loop waits held back, the part of them
     * charged to awaits, the part of that charged to the tasks each wait's end woke, and other
     * threads' loop waits (charged where sampled) */
    uint64_t loop_wait_ns, await_ns, woken_ns, other_loop_wait_ns;
    const hl_stats *stats; /* files, functions, lines, stacks */
    size_t nthreads; /* read each with hl_engine_thread_stat_locked */
    const hl_memory_totals *memory; /* the memory part's results (memory.h) */
    const hl_gpu_results *gpu; /* the GPU part's (gpu.h) */
    hl_native_results native; /* native frames' (native.h; name addresses with
                                     * hl_native_address) */
} hl_snapshot;

/* Takes the engine lock and fills *view; the results (the parts' too) stay still until
 * hl_engine_snapshot_end. The calling thread's own allocations are not sampled meanwhile. */
void hl_engine_snapshot_begin(hl_snapshot *view);
void hl_engine_thread_stat_locked(size_t index, hl_thread_stat *out);
/* The periods when profiling was on, between begin and end (control.h, hl_control_periods). */
size_t hl_engine_profiled_periods(uint64_t (*periods)[2], size_t capacity, uint64_t *dropped);
/* Whether profiling was off at any moment (control.h, hl_control_was_paused). */
int hl_engine_was_paused(void);
void hl_engine_snapshot_end(void);

/* ---- labels: regions and modules (labels.h) ------------------------------------------------- */

/* With the GIL held, on the program's thread: enter label `name` (the shell's id of a kind and
 * a name, HL_LABEL_SLICED or'ed in to keep its spans) and get the token that closes that entry (0: not recorded), or close it (1 when it
 * was open). Lock-free of the engine lock; a session need not be on. */
uint64_t hl_engine_label_push(uint32_t name);
int hl_engine_label_pop(uint64_t token);
/* The calling thread's innermost open node, or HL_NO_LABEL. */
uint32_t hl_engine_label_current(void);

/* The labels' results: the nodes (a copy, with the open entries' time so far in their wall),
 * and what the sampler charged to them. Begin takes the engine lock (the GIL held); end
 * releases it and frees the copy. */
typedef struct hl_labels_view {
    hl_label_node *nodes;
    size_t nnodes, open;
    const hl_label_charge *charges;
    size_t ncharges;
    const hl_label_line *lines;
    size_t nlines;
    const hl_stats *stats; /* what the lines' ids name */
    hl_label_slice *slices; /* a copy */
    size_t nslices;
    uint64_t origin_ns;
} hl_labels_view;
void hl_engine_labels_begin(hl_labels_view *view);
void hl_engine_labels_end(hl_labels_view *view);

/* Test hooks, with the GIL held: what the engine's own walker reads. Both return -EBUSY while
 * a session is on (the walker is then the sampler's), -EFAULT if the code object or the stack
 * could not be read. hl_engine_line_of: the line of a byte offset in a code object.
 * hl_engine_walk_locked, between hl_engine_snapshot_begin and _end: writes tstate's stack to frames
 * (innermost first; their ids resolve in the snapshot's stats) and returns its depth. */
int hl_engine_line_of(uintptr_t code, int offset, int *line);
int hl_engine_walk_locked(uintptr_t tstate, hl_frame *frames, int max_depth);
/* Test hook: n pieces of process pid's memory read as the sampler's read-ahead reads them (one
 * batch, memread.h): piece i, lengths[i] bytes at addresses[i], into out[i]; ok[i] 1 where it
 * was read whole. n at most HL_ENGINE_READ_PIECES_MAX (a batch's bound, IOV_MAX). pid 0: this
 * process, through hl_memread's path (the pipe where process_vm_readv is refused). */
#define HL_ENGINE_READ_PIECES_MAX 1024
void hl_engine_read_pieces(int pid, size_t n, const uintptr_t *addresses, const size_t *lengths,
                           uint8_t *const *out, uint8_t *ok);

/* ---- heatline dump: another process's stacks ------------------------------------------------ */

/* Runs run(context) with the calling thread's Python frame chain and recursion count set
 * aside, as python has them when it runs the main module, and returns what it returned; both
 * are put back after (compat.h, hl_compat_on_fresh_stack). The GIL is held. */
void *hl_engine_on_fresh_stack(void *(*run)(void *), void *context);

/* Not the engine's state: remote.c reads another process with a walker of its own, so these
 * need neither the engine lock nor the GIL (call them with it released), and work while a
 * session runs. hl_engine_dump fills *out (free it with hl_engine_dump_free in every case);
 * returns 0, or -1 with out->error set (remote.h). */
int hl_engine_dump(int pid, int flags, hl_dump *out);
void hl_engine_dump_free(hl_dump *dump);
/* heatline top's reader of another process (remote.h, hl_remote_*): found once, read again
 * and again without stopping it. The same rules: no engine lock, no GIL needed. */
hl_remote *hl_engine_remote_open(int pid, const uint8_t *opcode_flags, hl_dump *status);
int hl_engine_remote_sample(hl_remote *reader, hl_dump *out);
const hl_stats *hl_engine_remote_names(const hl_remote *reader);
void hl_engine_remote_close(hl_remote *reader);
/* heatline attach's shorter switch interval while it starts and stops (remote.h). */
int hl_engine_remote_switch_interval(int pid, unsigned long set_us, unsigned long expect_us,
                                     unsigned long *previous);

/* heatline attach: loads library into process pid and calls its function(argument) there
 * (inject.h). Not the engine's state either: call it without the GIL. Returns 0, or -1 with
 * out->error set. */
int hl_engine_inject(int pid, const char *library, const char *function, const char *argument,
                     uint64_t timeout_ns, hl_inject_result *out);

/* Test hook: whether compat.c's table for the running CPython holds its headers' offsets (1),
 * or the first field that differs (0, *field set). */
int hl_engine_remote_layout_check(const char **field);

/* Test hook: holds the engine lock for ns nanoseconds, as a long tick or a snapshot would (call
 * it with the GIL released). */
void hl_engine_hold_lock(uint64_t ns);

#endif
