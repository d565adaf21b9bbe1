/* engine.c: the engine room. See engine.h (the binding's side) and engine_part.h (the parts').
 *
 * One engine per process (hl_the_engine below): the lock, the tables (stats.h), the sampler's
 * state (sampler.h) and the parts (memory.c, gpu.c, control.c, periodic.c) that plug in through
 * hl_engine_part. This file holds the lifecycle (start, stop, pause, fork, reset), what the
 * parts and the binding may read, and the few calls the binding makes to a part, passed on;
 * it does no sampling itself.
 *
 * Locking: a part's start or stop runs without the engine lock (it may take it); the
 * sampler thread holds it for each tick, readers for each snapshot. The Python allocator hooks
 * can run in any thread that holds it, so every holder is marked as inside the engine first
 * (hl_engine_lock), and its allocations pass through unsampled.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h> /* first, as CPython requires (it defines _GNU_SOURCE); only for
                     * PyGILState_GetThisThreadState */

#include "engine.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "asyncwait.h"
#include "clock.h"
#include "compat.h"
#include "control.h"
#include "detach.h"
#include "exitstatus.h"
#include "memread.h"
#include "newthreads.h"
#include "periodic.h"
#include "sampler.h"
#include "sigterm.h"

typedef struct hl_engine {
    hl_lock lock; /* the engine lock (engine_part.h) */
    int running;   /* a session is on (changed only by start/stop/fork child) */
    int suspended; /* running, but the thread is stopped around a fork() */
    hl_config config; /* the session's settings (its scope moved into the walker) */
    hl_stats stats;
    hl_sampler sampler;
} hl_engine;

static hl_engine hl_the_engine = {
    .lock = HL_LOCK_INITIALIZER,
};

static const hl_engine_part *const parts[] = {
    &hl_memory_part,    &hl_gpu_part,    &hl_control_part,   &hl_periodic_part,
    &hl_asyncwait_part, &hl_detach_part, &hl_newthreads_part};
#define NPARTS (sizeof(parts) / sizeof(*parts))

/* ---- marking threads inside the engine ------------------------------------------------------ */

static void enter_engine(void) {
    for (size_t i = 0; i < NPARTS; i++)
        if (parts[i]->enter) parts[i]->enter();
}

static void leave_engine(void) {
    for (size_t i = 0; i < NPARTS; i++)
        if (parts[i]->leave) parts[i]->leave();
}

void hl_engine_lock(void) {
    enter_engine();
    hl_lock_acquire(&hl_the_engine.lock);
}

void hl_engine_unlock(void) {
    hl_lock_release(&hl_the_engine.lock);
    leave_engine();
}

#if HL_DEBUG
int hl_engine_lock_held(void) {
    return hl_lock_held(&hl_the_engine.lock);
}
#endif

/* ---- the lock, taken from a hook ------------------------------------------------------------ */

#define WAITING_SLOTS 64
static long waiting[WAITING_SLOTS];

/* How a hook waits for the lock. A tick holds it for tens of microseconds, but on a busy
 * machine the sampler thread can be preempted while it holds it, for a scheduler time slice
 * or more. A hook that slept on the mutex meanwhile would give its CPU away and count as
 * blocked (to the kernel and to any measurement) while the sampler charges it as busy. So a
 * hook spins briefly, then yields its CPU while staying runnable (which lets a preempted
 * holder run), and sleeps on the mutex only after HOOK_YIELD_NS (a snapshot holds the lock
 * for as long as it takes to build). On a loaded 2-core machine (load average 6, a Python
 * loop under `with heatline.profile()`), hooks that slept at once left the loop up to 10% of
 * its time waiting and up to 3.7% of it blocked. */
#define HOOK_SPIN_NS 100000
#define HOOK_YIELD_NS 50000000

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static int wait_for_lock_runnable(hl_lock *lock, uint64_t began) {
    int yielding = 0;
    for (unsigned i = 1;; i++) {
        if (yielding) sched_yield();
        else cpu_relax();
        if (yielding || i % 64 == 0) {
            if (hl_lock_try(lock)) return 1;
            uint64_t waited = hl_now_ns() - began;
            if (waited > HOOK_YIELD_NS) return 0;
            yielding = waited > HOOK_SPIN_NS;
        }
    }
}

void hl_engine_lock_from_hook(void) {
    hl_lock *lock = &hl_the_engine.lock;
    if (hl_lock_try(lock)) return;
    long self = (long)gettid();
    long *slot = NULL;
    for (int i = 0; i < WAITING_SLOTS && slot == NULL; i++) {
        long expected = 0;
        if (__atomic_compare_exchange_n(&waiting[i], &expected, self, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_RELAXED))
            slot = &waiting[i];
    }
    uint64_t began = hl_now_ns();
    if (!wait_for_lock_runnable(lock, began)) hl_lock_acquire(lock);
    if (slot != NULL) __atomic_store_n(slot, 0, __ATOMIC_RELEASE);
    /* The profiler's own doing, which the sampler charges as busy (see engine_part.h): measured so
     * that the report can say how much of a thread's time it was, and the tests can tell it
     * from the program's own blocking. */
    hl_thread *t = hl_sampler_find_thread(&hl_the_engine.sampler, self);
    if (t != NULL) t->engine_wait_ns += hl_now_ns() - began;
}

void hl_engine_unlock_from_hook(void) {
    hl_lock_release(&hl_the_engine.lock);
}

/* The sampler's waiting_for_lock: lock-free. */
static int thread_waiting(long native_id) {
    for (int i = 0; i < WAITING_SLOTS; i++)
        if (__atomic_load_n(&waiting[i], __ATOMIC_ACQUIRE) == native_id) return 1;
    return 0;
}

/* ---- what the parts read -------------------------------------------------------------------- */

int hl_engine_paused(void) {
    return __atomic_load_n(&hl_the_engine.sampler.paused, __ATOMIC_RELAXED);
}

void hl_engine_wait_until_gone(int tid) {
    hl_sampler_wait_until_gone(tid);
}

size_t hl_engine_threads_seen_locked(void) {
    HL_ASSERT_ENGINE_LOCKED();
    return hl_the_engine.sampler.nthreads;
}

hl_stats *hl_engine_stats_locked(void) {
    HL_ASSERT_ENGINE_LOCKED();
    return &hl_the_engine.stats;
}

uint32_t hl_engine_current_line_locked(void) {
    HL_ASSERT_ENGINE_LOCKED();
    hl_engine *e = &hl_the_engine;
    const hl_sampler *s = &e->sampler;
    uintptr_t tstate = (uintptr_t)PyGILState_GetThisThreadState();
    int own = tstate != 0;
    if (tstate == 0) {
        for (size_t i = 0; i < s->nthreads && tstate == 0; i++)
            if (s->threads[i].alive && s->threads[i].main) tstate = s->threads[i].tstate;
        if (tstate == 0) return HL_NO_LINE;
    }
    hl_frame frame;
    hl_memread_direct(own);
    int found = hl_walk_user(&e->sampler.walker, tstate, &frame);
    hl_memread_direct(0);
    if (found != 1) return HL_NO_LINE;
    int64_t id = hl_stats_line(&e->stats, frame.file, frame.line, frame.function);
    return id < 0 ? HL_NO_LINE : (uint32_t)id;
}

void hl_engine_request_pending_call(int *requested, int (*call)(void *)) {
    if (__atomic_load_n(requested, __ATOMIC_ACQUIRE)) {
        hl_compat_notice_pending_calls(); /* still pending: another thread may have reset it */
        return;
    }
    __atomic_store_n(requested, 1, __ATOMIC_RELAXED);
    /* Py_AddPendingCall needs no GIL and no thread state; it fails only when its queue is
     * full, and then the request is made again at the next wake-up that asks. */
    if (Py_AddPendingCall(call, NULL) != 0) __atomic_store_n(requested, 0, __ATOMIC_RELAXED);
    else hl_compat_notice_pending_calls();
}

void hl_engine_enter(void) {
    enter_engine();
}

void hl_engine_leave(void) {
    leave_engine();
}

int hl_engine_take_loop_wait_locked(hl_loop_wait *out) {
    HL_ASSERT_ENGINE_LOCKED();
    hl_engine *e = &hl_the_engine;
    if (!e->running) return 0;
    return hl_sampler_take_loop_wait(&e->sampler, (long)gettid(), out);
}

void hl_engine_charge_loop_wait_locked(const hl_loop_wait *wait) {
    HL_ASSERT_ENGINE_LOCKED();
    hl_sampler_charge_loop_wait(&hl_the_engine.sampler, wait);
}

int hl_engine_frame_at_locked(uintptr_t address, hl_frame *out) {
    HL_ASSERT_ENGINE_LOCKED();
    hl_memread_direct(1); /* the caller holds the GIL and the frame's owner */
    int result = hl_walk_frame_at(&hl_the_engine.sampler.walker, address, out);
    hl_memread_direct(0);
    return result;
}

/* ---- the sampler's callbacks ---------------------------------------------------------------- */

static void parts_tick_locked(uint64_t now_ns) {
    HL_ASSERT_ENGINE_LOCKED();
    for (size_t i = 0; i < NPARTS; i++)
        if (parts[i]->tick) parts[i]->tick(now_ns);
}

static void parts_wake_locked(uint64_t now_ns) {
    HL_ASSERT_ENGINE_LOCKED();
    for (size_t i = 0; i < NPARTS; i++)
        if (parts[i]->wake) parts[i]->wake(now_ns);
}

/* ---- lifecycle ------------------------------------------------------------------------------ */

/* fork(): the child has no sampler thread. Holding the lock across fork() gives the child
 * consistent tables; the child then marks the engine stopped so stop() is a no-op there. */
static void before_fork(void) {
    hl_lock_acquire(&hl_the_engine.lock);
}
static void after_fork_parent(void) {
    hl_lock_release(&hl_the_engine.lock);
}
static void after_fork_child(void) {
    hl_lock_reinit(&hl_the_engine.lock);
    hl_the_engine.running = 0;
    hl_the_engine.suspended = 0;
    hl_the_engine.sampler.stop_requested = 0;
    for (size_t i = 0; i < NPARTS; i++)
        if (parts[i]->after_fork_child) parts[i]->after_fork_child();
}

static void reset_results_locked(hl_engine *e) {
    HL_ASSERT_ENGINE_LOCKED();
    hl_sampler_reset(&e->sampler);
    hl_walker_clear(&e->sampler.walker); /* code entries point into the tables cleared next */
    for (size_t i = 0; i < NPARTS; i++) /* their results refer to lines in the tables */
        if (parts[i]->reset) parts[i]->reset();
    hl_native_reset();
    hl_labels_clear_charges(); /* their lines are ids in the tables cleared next */
    hl_stats_clear(&e->stats);
}

/* The walker's layout, for the test hooks outside a session (lock held). */
static void prepare_walker_locked(hl_engine *e) {
    HL_ASSERT_ENGINE_LOCKED();
    if (!e->running) {
        hl_compat_init(&e->sampler.walker.layout);
        e->sampler.walker.stats = &e->stats;
        (void)hl_memread_init();
    }
}

int hl_engine_start(hl_config *config) {
    static int atfork_registered = 0;
    hl_engine *e = &hl_the_engine;
    hl_sampler *s = &e->sampler;
    int err = 0;

    hl_lock_acquire(&e->lock);
    if (e->running) {
        err = -EBUSY;
        goto fail_locked;
    }
    err = hl_memread_init();
    if (err != 0) goto fail_locked;
    reset_results_locked(e);
    hl_labels_reset_counts(hl_now_ns()); /* the labels' counts and walls are this session's */
    hl_compat_init(&s->walker.layout);
    s->walker.scope = config->scope;
    memset(&config->scope, 0, sizeof(config->scope));
    memcpy(s->walker.opcode_flags, config->opcode_flags, sizeof(s->walker.opcode_flags));
    s->walker.stats = &e->stats;
    e->config = *config;
    s->lock = &e->lock;
    s->stats = &e->stats;
    s->sampling_interval_ns = config->sampling_interval_ns; /* > 0: module.c checks it */
    s->main_native_id = config->main_native_id;
    s->paused = config->paused;
    s->on_thread_start = enter_engine; /* for good: nothing the sampler allocates is sampled */
    s->after_tick = parts_tick_locked;
    s->on_wake = parts_wake_locked;
    s->waiting_for_lock = thread_waiting;
    s->on_loop_wait = hl_asyncwait_request;
    hl_native_configure(config->native, config->sampling_interval_ns);
    e->suspended = 0;
    hl_sampler_prepare(s);

    err = hl_sampler_spawn(s);
    if (err != 0) goto fail_cond;
    e->running = 1;
    if (!atfork_registered) {
        pthread_atfork(before_fork, after_fork_parent, after_fork_child);
        atfork_registered = 1;
    }
    hl_lock_release(&e->lock);
    for (size_t i = 0; i < NPARTS; i++) {
        HL_ASSERT(!hl_engine_lock_held()); /* a part's start may take it */
        err = parts[i]->start ? parts[i]->start(&e->config) : 0;
        if (err != 0) break;
    }
    e->config.control_command = e->config.control_state = NULL; /* the caller's, copied */
    if (err != 0) {
        hl_engine_stop();
        return err;
    }
    return 0;

fail_cond:
    hl_sampler_release(s);
fail_locked:
    hl_lock_release(&e->lock);
    hl_scope_clear(&config->scope);
    return err;
}

void hl_engine_start_released(void) {
    for (size_t i = 0; i < NPARTS; i++)
        if (parts[i]->start_released) parts[i]->start_released(&hl_the_engine.config);
}

void hl_engine_stop_released(void) {
    HL_ASSERT(!hl_engine_lock_held()); /* the parts' stops may take it */
    for (size_t i = 0; i < NPARTS; i++)
        if (parts[i]->stop_released) parts[i]->stop_released();
}

void hl_engine_stop_parts(void) {
    HL_ASSERT(!hl_engine_lock_held());
    for (size_t i = 0; i < NPARTS; i++)
        if (parts[i]->stop) parts[i]->stop();
}

void hl_engine_stop(void) {
    hl_engine *e = &hl_the_engine;
    hl_lock_acquire(&e->lock);
    if (!e->running) {
        hl_lock_release(&e->lock);
        return;
    }
    if (!e->suspended) hl_sampler_join(&e->sampler);
    hl_sampler_flush_loop_waits(&e->sampler);
    e->running = 0;
    e->suspended = 0;
    hl_sampler_release(&e->sampler);
    hl_lock_release(&e->lock);
    hl_labels_end(
        hl_now_ns()); /* what the program enters and exits from now is not this session's */
}

void hl_engine_release_after_fork(void) {
    hl_engine *e = &hl_the_engine;
    hl_lock_acquire(&e->lock);
    int running = e->running;
    hl_lock_release(&e->lock);
    if (running) return;
    for (size_t i = 0; i < NPARTS; i++)
        if (parts[i]->release_after_fork) parts[i]->release_after_fork();
}

void hl_engine_suspend_for_fork(void) {
    hl_engine *e = &hl_the_engine;
    for (size_t i = 0; i < NPARTS; i++) /* their threads may wait for the lock: not held */
        if (parts[i]->suspend_for_fork) parts[i]->suspend_for_fork();
    hl_lock_acquire(&e->lock);
    if (e->running && !e->suspended) {
        hl_sampler_join(&e->sampler);
        e->suspended = 1;
    }
    hl_lock_release(&e->lock);
}

static void respawn_sampler(void) {
    hl_engine *e = &hl_the_engine;
    hl_lock_acquire(&e->lock);
    if (e->running && e->suspended && hl_sampler_spawn(&e->sampler) == 0) e->suspended = 0;
    hl_lock_release(&e->lock);
    for (size_t i = 0; i < NPARTS; i++) /* each knows whether it was suspended and still runs */
        if (parts[i]->resume_after_fork) parts[i]->resume_after_fork();
}

/* The thread that forked and its Python stack depth at the after_in_parent hook, for
 * respawn_when_fork_returned. */
static struct {
    PyThreadState *tstate;
    int depth;
    int tries;
} forked;

/* A pending call runs at the main thread's next check of the eval breaker, and that can still
 * be inside os.fork(): in a Python after_in_parent hook registered after heatline's (logging
 * has one). Deeper than the frame that called os.fork(), it asks to be run again, a bounded
 * number of times. */
static int respawn_when_fork_returned(void *unused) {
    (void)unused;
    if (PyThreadState_Get() == forked.tstate && hl_compat_python_depth() > forked.depth &&
        forked.tries++ < 10000) {
        if (Py_AddPendingCall(respawn_when_fork_returned, NULL) == 0) return 0;
    }
    respawn_sampler();
    return 0;
}

void hl_engine_resume_after_fork(void) {
    /* Where os.fork() counts threads after its after_in_parent hooks (3.13+), a sampler
     * started in the hook would make it warn that the process is multi-threaded: it is
     * started by a pending call instead, once os.fork() has returned. Known limit: after a
     * fork from another thread while the main thread waits in C, sampling resumes when the
     * main thread next runs Python code. */
    if (hl_compat_fork_counts_threads_after_hooks()) {
        forked.tstate = PyThreadState_Get();
        forked.depth = hl_compat_python_depth();
        forked.tries = 0;
        if (Py_AddPendingCall(respawn_when_fork_returned, NULL) == 0) return;
    }
    respawn_sampler();
}

void hl_engine_set_paused(int paused) {
    __atomic_store_n(&hl_the_engine.sampler.paused, paused ? 1 : 0, __ATOMIC_RELAXED);
}

/* ---- what the binding asks of a part ------------------------------------------------------- */

void hl_engine_pause(int paused) {
    hl_control_set_paused(paused); /* the record is the control part's */
}

void hl_engine_set_periodic(uint64_t write_interval_ns, PyObject *callback) {
    hl_periodic_set(write_interval_ns, callback);
}

void hl_engine_on_new_threads(PyObject *callback) {
    hl_newthreads_set(callback);
}

int hl_engine_watch_detach(const char *stop_path, const char *request_path, PyObject *callback) {
    return hl_detach_watch(stop_path, request_path, callback);
}

int hl_engine_chain_sigterm(void) {
    return hl_sigterm_chain();
}

int hl_engine_sigterm_delivered(void) {
    return hl_sigterm_delivered();
}

int hl_engine_record_exit_status(const char *path) {
    return hl_exit_status_record(path);
}

void hl_engine_wait_for_tick(void) {
    /* A tick runs with the lock held, from its check of the paused flag to its last charge. */
    hl_lock_acquire(&hl_the_engine.lock);
    hl_lock_release(&hl_the_engine.lock);
}

int hl_engine_running(void) {
    hl_engine_lock();
    int running = hl_the_engine.running;
    hl_engine_unlock();
    return running;
}

/* ---- reading results ------------------------------------------------------------------------ */

void hl_engine_snapshot_begin(hl_snapshot *view) {
    hl_engine *e = &hl_the_engine;
    hl_engine_lock();
    hl_sampler_flush_loop_waits(&e->sampler); /* a wait held back goes where it was sampled */
    hl_asyncwait_results asyncwait;
    hl_asyncwait_results_get_locked(&asyncwait);
    view->loop_wait_ns = e->sampler.loop_wait_ns;
    view->other_loop_wait_ns = e->sampler.other_loop_wait_ns;
    view->await_ns = asyncwait.await_ns;
    view->woken_ns = asyncwait.woken_ns;
    view->samples = e->sampler.samples;
    view->sampled_ns = e->sampler.sampled_ns;
    view->sampling_interval_ns = e->sampler.sampling_interval_ns;
    view->lost_ns = e->sampler.lost_ns;
    view->max_gap_ns = e->sampler.max_gap_ns;
    view->max_tick_ns = e->sampler.max_tick_ns;
    view->long_gaps = e->sampler.long_gaps;
    view->long_gap_ns = e->sampler.long_gap_ns;
    view->stacks_reused = e->sampler.stacks_reused;
    HL_ASSERT(!e->suspended || e->running); /* suspended: running, its thread joined for a fork */
    view->shared_descriptors = e->sampler.shared_descriptors;
    view->schedstat_error = e->sampler.schedstat_error;
    view->schedstat_tid = e->sampler.schedstat_tid;
    view->stats = &e->stats;
    view->nthreads = e->sampler.nthreads;
    view->memory = hl_memory_totals_get_locked();
    view->gpu = hl_gpu_results_get_locked();
    hl_native_results_get(&view->native);
}

void hl_engine_thread_stat_locked(size_t index, hl_thread_stat *out) {
    HL_ASSERT_ENGINE_LOCKED();
    HL_ASSERT(index < hl_the_engine.sampler.nthreads);
    const hl_thread *t = &hl_the_engine.sampler.threads[index];
    out->native_id = t->native_id;
    out->main = t->main;
    memcpy(out->comm, t->comm, sizeof(out->comm));
    memcpy(out->ns, t->ns, sizeof(out->ns));
    out->unattributed_ns = t->unattributed_ns;
    out->cpu_ns = t->cpu_ns;
    out->engine_wait_ns = t->engine_wait_ns;
}

size_t hl_engine_profiled_periods(uint64_t (*periods)[2], size_t capacity, uint64_t *dropped) {
    return hl_control_periods(periods, capacity, dropped);
}

int hl_engine_was_paused(void) {
    return hl_control_was_paused();
}

void hl_engine_snapshot_end(void) {
    hl_engine_unlock();
}

/* ---- labels (labels.h) ------------------------------------------------------------------- */

uint64_t hl_engine_label_push(uint32_t name) {
    return hl_labels_push(name, hl_now_ns());
}

int hl_engine_label_pop(uint64_t token) {
    return hl_labels_pop(token, hl_now_ns());
}

uint32_t hl_engine_label_current(void) {
    return hl_labels_current();
}

void hl_engine_labels_begin(hl_labels_view *view) {
    view->nodes = hl_labels_nodes(hl_now_ns(), &view->nnodes, &view->open);
    view->slices = hl_labels_slices(&view->nslices, &view->origin_ns);
    hl_engine_lock();
    view->charges = hl_labels_charges(&view->ncharges);
    view->lines = hl_labels_lines(&view->nlines);
    view->stats = &hl_the_engine.stats;
}

void hl_engine_labels_end(hl_labels_view *view) {
    hl_engine_unlock();
    free(view->nodes);
    view->nodes = NULL;
    free(view->slices);
    view->slices = NULL;
}

int hl_engine_line_of(uintptr_t code, int offset, int *line) {
    hl_engine *e = &hl_the_engine;
    int ok = 0;
    hl_engine_lock();
    int running = e->running;
    if (!running) {
        prepare_walker_locked(e);
        *line = hl_walker_line_of(&e->sampler.walker, code, offset, &ok);
    }
    hl_engine_unlock();
    return running ? -EBUSY : ok ? 0 : -EFAULT;
}

void hl_engine_read_pieces(int pid, size_t n, const uintptr_t *addresses, const size_t *lengths,
                           uint8_t *const *out, uint8_t *ok) {
    struct iovec local[HL_ENGINE_READ_PIECES_MAX], remote[HL_ENGINE_READ_PIECES_MAX];
    if (n > HL_ENGINE_READ_PIECES_MAX) n = HL_ENGINE_READ_PIECES_MAX;
    if (pid == 0) (void)hl_memread_init(); /* this process's own reader: its pid, its path */
    for (size_t i = 0; i < n; i++) {
        local[i] = (struct iovec){out[i], lengths[i]};
        remote[i] = (struct iovec){(void *)addresses[i], lengths[i]};
    }
    hl_memread_batch(pid, local, remote, n, ok);
}

int hl_engine_walk_locked(uintptr_t tstate, hl_frame *frames, int max_depth) {
    HL_ASSERT_ENGINE_LOCKED();
    hl_engine *e = &hl_the_engine;
    if (e->running) return -EBUSY;
    prepare_walker_locked(e);
    int flags;
    int depth = hl_walk(&e->sampler.walker, tstate, frames, max_depth, &flags, NULL);
    return depth < 0 ? -EFAULT : depth;
}

void hl_engine_hold_lock(uint64_t ns) {
    struct timespec hold = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
    hl_engine_lock();
    while (nanosleep(&hold, &hold) != 0 && errno == EINTR) {
    }
    hl_engine_unlock();
}

int hl_engine_dump(int pid, int flags, hl_dump *out) {
    return hl_remote_dump(pid, flags, out);
}

void hl_engine_dump_free(hl_dump *dump) {
    hl_remote_dump_free(dump);
}

hl_remote *hl_engine_remote_open(int pid, const uint8_t *opcode_flags, hl_dump *status) {
    return hl_remote_open(pid, opcode_flags, status);
}

int hl_engine_remote_sample(hl_remote *reader, hl_dump *out) {
    return hl_remote_sample(reader, out);
}

const hl_stats *hl_engine_remote_names(const hl_remote *reader) {
    return hl_remote_names(reader);
}

void hl_engine_remote_close(hl_remote *reader) {
    hl_remote_close(reader);
}

int hl_engine_remote_switch_interval(int pid, unsigned long set_us, unsigned long expect_us,
                                     unsigned long *previous) {
    return hl_remote_switch_interval(pid, set_us, expect_us, previous);
}

int hl_engine_inject(int pid, const char *library, const char *function, const char *argument,
                     uint64_t timeout_ns, hl_inject_result *out) {
    return hl_inject(pid, library, function, argument, timeout_ns, out);
}

int hl_engine_remote_layout_check(const char **field) {
    return hl_compat_remote_check(field);
}

void *hl_engine_on_fresh_stack(void *(*run)(void *), void *context) {
    return hl_compat_on_fresh_stack(run, context);
}
