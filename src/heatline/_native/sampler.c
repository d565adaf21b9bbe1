/* sampler.c: the tick: the sampling thread and how it classifies each sample. The engine
 * (engine.c) owns its state and starts and joins it (sampler.h).
 *
 * Why a thread and no signals: a timer signal must be delivered to some thread, interrupts its
 * system calls (EINTR), competes with the program's own SIGALRM/SIGPROF handlers and timers,
 * and in CPython only reaches Python code on the main thread. The engine instead runs one
 * plain pthread (no Python thread state, all signals blocked) that wakes at randomised
 * intervals and looks at every Python thread from outside, like an out-of-process sampler
 * would, but with in-process reads. The profiled threads are never interrupted, never wait
 * for the profiler, and the GIL is never taken, so a single-threaded program sees no GIL
 * traffic at all.
 *
 * Each tick, for each thread T, with dt the wall time since the previous tick:
 *   1. c1 = T's CPU clock (clock_gettime on its per-thread clock).
 *   2. Walk T's Python stack (frames.c) and note whether its innermost frame is executing a
 *      call instruction ("in a call": the thread is inside code that frame called).
 *   3. Read which thread holds the GIL (compat.c).
 *   4. c2 = T's CPU clock again. Steps 2-3 take several microseconds, so a thread that is on
 *      a CPU right now shows c2 > c1; a blocked one shows c2 == c1.
 *   Then T's dt is charged, at the innermost frame that is user code, to:
 *      system  if T is blocked: not running on a CPU and not runnable (sleep, I/O wait,
 *              lock wait, join, waiting for the GIL). A runnable thread (state R) that is
 *              waiting for a CPU, possibly pushed off it by the sampler itself on a busy
 *              machine, is busy with its own work and counts as running, except when it is
 *              still waking from a wait: its previous sample was blocked and its CPU clock
 *              has not moved since (c1 equals the previous tick's reading, and c2 == c1).
 *              The wait then ended, but the thread has not run a single instruction of its
 *              own since: on a busy machine a thread woken from time.sleep() or a lock waits
 *              for a CPU for milliseconds, and that wait is the tail of its sleep, not work
 *              (--use-virtual-time, which keeps only running time, made a sleep the hottest
 *              line of a loaded machine). A thread that ran in between (its clock moved),
 *              or that was running at its previous sample, is never charged this way;
 *      native  if T is running inside a call (C extension, builtin, BLAS, with or without
 *              the GIL: the innermost frame is executing a call instruction);
 *      python  if T is running and holds the GIL (executing bytecode), or is running without
 *              it at an instruction where threads hand the GIL over (the interpreter's own
 *              switching work, which only shows up when threads compete for the GIL; on
 *              3.9, where operators check too, only while another thread holds the GIL);
 *      native  otherwise: running without the GIL inside an operator, which only C code that
 *              released the GIL can do (numpy arithmetic, `a @ b`).
 *   Of that dt, the run-queue wait the kernel measured since (schedstat; below, "Waiting for a
 *   CPU") is charged first, as cpu_wait: a runnable thread counts as running in the point
 *   sample, and the measured waits take its time off the CPU back out of it.
 * The category is a point sample of T's state at a random instant, so over many ticks each
 * line's python/native/system times estimate the time T spent there in each state, without
 * the bias of charging a whole interval's CPU time to wherever the thread stopped.
 *
 * The intervals are drawn uniformly from [0.5, 1.5) x the mean so ticks cannot lock onto a
 * periodic pattern in the program.
 */
#define _GNU_SOURCE
#include "sampler.h"
#include "sigterm.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "array.h"
#include "clock.h"
#include "labels.h"
#include "memread.h"

#define MAX_THREADS_SCANNED 4096
#define WALK_ATTEMPTS 3

/* Linux encodes a thread's CPU clock id from its kernel id (as glibc's pthread_getcpuclockid
 * does); deriving it from the id avoids touching a pthread_t we cannot validate. */
static clockid_t thread_clock(long native_id) {
    return (clockid_t)((~(unsigned)native_id << 3) | 6u);
}

static int cpu_now(const hl_thread *t, uint64_t *ns) {
    struct timespec ts;
    if (clock_gettime(t->clock, &ts) != 0) return -1;
    *ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    return 0;
}

/* Whether a thread whose CPU clock stood still during the probe is nevertheless runnable:
 * ready to run but waiting for a CPU (state R in /proc). On a busy machine the sampler itself
 * can be what pushed the thread off its CPU, so standing still is not proof of blocking.
 * The file is open before the second clock read, so that the state read (pread at offset 0,
 * which makes the kernel write the line afresh) follows that read closely, as it must.
 *
 * In the sampler's own descriptor table (own_descriptor_table below), where the program can
 * neither take its number nor be handed it, the file is opened once per thread and kept:
 * a busy thread's tick then makes no system call for it at all, and a waiting thread's one
 * pread (an open, a read and a close cost 2.5 times as much). Only where that table could not
 * be had is the table the program's, and then the file is opened and closed within the tick:
 * one kept between ticks would be one the program can close (os.closerange) and reuse, after
 * which heatline would read or close the program's file, and it would cost the program one
 * descriptor per waiting thread against its RLIMIT_NOFILE. */
static int open_stat(const hl_sampler *e, hl_thread *t) {
    if (t->stat_fd >= 0) return t->stat_fd;
    char path[64];
    snprintf(path, sizeof(path), "/proc/self/task/%ld/stat", t->native_id);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (e->own_table) t->stat_fd = fd;
    return fd;
}

static void done_with_stat(hl_thread *t, int stat_fd) {
    if (stat_fd >= 0 && stat_fd != t->stat_fd) close(stat_fd);
}

/* On the sampler thread only: the kept file is in that thread's descriptor table. */
static void close_stat(hl_thread *t) {
    if (t->stat_fd >= 0) close(t->stat_fd);
    t->stat_fd = -1;
}

/* ---- waiting for a CPU ------------------------------------------------------------------
 *
 * A thread's run-queue wait, from /proc/self/task/TID/schedstat (its second field), is known
 * once the wait ended: read at the ticks where the thread ran, moved out of what the ticks
 * that found it not run since charged (settle_wait), the rest charged as HL_CPU_WAIT out of its
 * next ticks. docs/design-engine.md, "Waiting for a CPU", says why and how. The file is kept
 * open per thread in the sampler's own descriptor table, as the stat file is; in the program's
 * table it is opened and closed at each read. Missing, refused or reading zeros: no waits are
 * measured this session (the profile says so). */
static int open_schedstat(hl_sampler *e, hl_thread *t) {
    if (t->schedstat_fd >= 0) return t->schedstat_fd;
    char path[64];
    snprintf(path, sizeof(path), "/proc/self/task/%ld/schedstat", t->native_id);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int error = errno;
        /* a thread that ended meanwhile has no stat file either */
        snprintf(path, sizeof(path), "/proc/self/task/%ld/stat", t->native_id);
        if (error != ENOENT || access(path, F_OK) == 0) {
            e->schedstat_error = error;
            e->schedstat_tid = t->native_id;
        }
        return -1;
    }
    if (e->own_table) t->schedstat_fd = fd;
    return fd;
}

/* On the sampler thread only, as close_stat. */
static void close_schedstat(hl_thread *t) {
    if (t->schedstat_fd >= 0) close(t->schedstat_fd);
    t->schedstat_fd = -1;
}

/* The second field of a schedstat file's text, or -1 when it is not three numbers or all three
 * are 0 while the thread has run (sched_info off). */
static int parse_run_delay(const char *text, uint64_t cpu_ns, uint64_t *delay_ns) {
    unsigned long long on_cpu = 0, delay = 0, slices = 0;
    if (sscanf(text, "%llu %llu %llu", &on_cpu, &delay, &slices) != 3) return -1;
    if (on_cpu == 0 && delay == 0 && slices == 0 && cpu_ns != 0) return -1;
    *delay_ns = delay;
    return 0;
}

static void forget_unrun(hl_thread *t) {
    memset(t->unrun_ns, 0, sizeof(t->unrun_ns));
    t->unrun_cell = -1;
    t->unrun_stack = HL_NO_STACK;
    t->unrun_label = HL_NO_LABEL;
}

/* Reads the thread's run-queue wait; returns what it grew by since the previous read. */
static uint64_t read_run_delay(hl_sampler *e, hl_thread *t, uint64_t cpu_ns) {
    int fd = open_schedstat(e, t);
    if (fd < 0) return 0;
    char buffer[96];
    ssize_t n = pread(fd, buffer, sizeof(buffer) - 1, 0);
    if (fd != t->schedstat_fd) close(fd);
    if (n <= 0) return 0;
    buffer[n] = '\0';
    uint64_t delay;
    if (parse_run_delay(buffer, cpu_ns, &delay) != 0) {
        e->schedstat_error = HL_SCHEDSTAT_ZEROS;
        e->schedstat_tid = t->native_id;
        return 0;
    }
    if (!t->has_run_delay) { /* the first read: what of it is the session's (sampler.h) */
        t->has_run_delay = 1;
        if (t->started_since) t->run_delay_ns = 0;
        else if (t->native_id == e->start_tid && e->has_start_run_delay)
            t->run_delay_ns = e->start_run_delay_ns;
        else t->run_delay_ns = delay;
    }
    uint64_t grew = delay >= t->run_delay_ns ? delay - t->run_delay_ns : 0;
    t->run_delay_ns = delay;
    t->has_run_delay = 1;
    return grew;
}

/* A wait of `grew` ns measured as the thread ran again: first out of what the samples that
 * found it not run since charged (the wait was then), the rest due from its next samples. */
static void settle_wait(hl_sampler *e, hl_thread *t, uint64_t grew) {
    static const int order[] = {HL_PYTHON, HL_NATIVE, HL_SYSTEM};
    for (size_t i = 0; i < sizeof(order) / sizeof(*order) && grew != 0; i++) {
        int from = order[i];
        uint64_t wanted = t->unrun_ns[from] < grew ? t->unrun_ns[from] : grew;
        if (wanted == 0 || t->unrun_cell < 0) continue;
        uint64_t moved =
            hl_stats_move_cell(e->stats, (uint32_t)t->unrun_cell, from, HL_CPU_WAIT, wanted);
        if (t->unrun_stack != HL_NO_STACK)
            hl_stats_move_stack(e->stats, t->unrun_stack, from, HL_CPU_WAIT, moved);
        hl_labels_move(t->unrun_label, from, HL_CPU_WAIT, moved);
        t->ns[from] -= moved;
        t->ns[HL_CPU_WAIT] += moved;
        grew -= moved;
    }
    t->cpu_wait_due_ns += grew;
    forget_unrun(t);
}

/* While paused: the waits for a CPU meanwhile are charged to no one, the starting thread's
 * too while it is not registered yet (paused from the start). */
static void rebase_waits(hl_sampler *e) {
    if (e->has_start_run_delay && e->schedstat_error == 0) {
        char path[64], buffer[96];
        snprintf(path, sizeof(path), "/proc/self/task/%ld/schedstat", e->start_tid);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t n = fd < 0 ? -1 : pread(fd, buffer, sizeof(buffer) - 1, 0);
        if (fd >= 0) close(fd);
        uint64_t delay;
        if (n > 0) {
            buffer[n] = '\0';
            if (parse_run_delay(buffer, 0, &delay) == 0) e->start_run_delay_ns = delay;
        }
    }
    for (size_t i = 0; i < e->nthreads; i++) {
        hl_thread *t = &e->threads[i];
        if (!t->alive) continue;
        uint64_t c1;
        if (e->schedstat_error == 0 && cpu_now(t, &c1) == 0) (void)read_run_delay(e, t, c1);
        t->cpu_wait_due_ns = 0;
        forget_unrun(t);
    }
}

static int runnable(int stat_fd) {
    char buffer[512];
    if (stat_fd < 0) return 0;
    ssize_t n = pread(stat_fd, buffer, sizeof(buffer) - 1, 0);
    if (n <= 0) return 0;
    buffer[n] = '\0';
    const char *end_of_name = strrchr(buffer, ')'); /* the name itself may hold ')' */
    return end_of_name != NULL && end_of_name[1] == ' ' && end_of_name[2] == 'R';
}

static void charge_loop_wait(hl_sampler *e, const hl_loop_wait *wait);

static void forget_memo(hl_thread *t) {
    free(t->memo);
    t->memo = NULL;
    t->memo_capacity = 0;
    t->memo_valid = 0;
}

/* On the sampler thread only: its native-frames event and its stat file live in that thread's
 * descriptor table. */
static void forget_thread(hl_sampler *e, hl_thread *t) {
    if (t->loop_wait != NULL && t->loop_wait->ns != 0) {
        charge_loop_wait(e, t->loop_wait);
        t->loop_wait->ns = 0;
    }
    /* It ended: a wait that ended after its last read cannot be read any more, but the samples
     * that found it runnable and not run since were that wait. */
    settle_wait(e, t, t->unrun_ns[HL_PYTHON] + t->unrun_ns[HL_NATIVE]);
    t->cpu_wait_due_ns = 0;
    t->alive = 0;
    hl_native_thread_close(&t->native);
    close_stat(t);
    close_schedstat(t);
    forget_memo(t);
}

static uint64_t next_interval(hl_sampler *e) {
    double u = (double)(hl_next_random(&e->rng) >> 11) / 9007199254740992.0; /* [0, 1) */
    uint64_t wait = (uint64_t)((0.5 + u) * (double)e->sampling_interval_ns);
    return wait ? wait : 1;
}

/* ---- the thread registry ------------------------------------------------------------- */

/* A live OS thread is sampled once, whatever the number of thread states carry its id. Its
 * oldest state is the one it runs: a newer one with the same id is usually a state that
 * thread preallocated for a thread it is starting, which carries its creator's id until the
 * new thread binds it. */
hl_thread *hl_sampler_find_thread(hl_sampler *e, long native_id) {
    HL_ASSERT(hl_lock_held(e->lock)); /* the registry changes at every tick */
    for (size_t i = 0; i < e->nthreads; i++)
        if (e->threads[i].alive && e->threads[i].native_id == native_id) return &e->threads[i];
    return NULL;
}

static int add_thread(hl_sampler *e, uintptr_t tstate, long native_id) {
    if (HL_ARRAY_RESERVE(e->threads, e->threads_capacity, e->nthreads + 1, 16) != 0) return -1;
    hl_thread *t = &e->threads[e->nthreads++];
    memset(t, 0, sizeof(*t));
    t->tstate = tstate;
    t->native_id = native_id;
    /* Read now: a thread may end before the profile is built (its Python name, where it has
     * one, is read by the shell: newthreads.h). */
    hl_thread_comm(native_id, t->comm, sizeof(t->comm));
    t->clock = thread_clock(native_id);
    t->main = native_id == e->main_native_id;
    t->alive = 1;
    hl_native_thread_init(&t->native);
    t->stat_fd = -1;
    t->schedstat_fd = -1;
    forget_unrun(t);
    t->started_since = e->first_tick_done;
    return 0;
}

/* 3.9 and 3.10 record a thread's pthread_t in its PyThreadState but not its kernel id, which
 * the CPU clock needs. glibc keeps the kernel id inside the structure a pthread_t points to,
 * at an offset private to glibc. It is found by looking for the calling thread's own id in
 * its own structure; done in two threads (the one starting the engine and the sampler), the
 * offsets that match in both leave no coincidences in practice. */
#define TID_SCAN_BYTES 2048
static void tid_offsets(unsigned char *matches) {
    uintptr_t self = (uintptr_t)pthread_self();
    int id = (int)gettid();
    for (size_t offset = 0; offset < TID_SCAN_BYTES; offset += sizeof(int)) {
        int value;
        if (hl_memread(&value, self + offset, sizeof(value)) != 0 || value != id)
            matches[offset / sizeof(int)] = 0;
    }
}

/* A thread state's kernel thread id (0: none yet; 3.9 and 3.10 through its pthread_t, above)
 * and its next pointer in the interpreter's list: read together, the id field and the next
 * pointer lying a few dozen bytes apart in the structure (one process_vm_readv a thread a tick,
 * not two). Returns 0, or -1 if the state cannot be read. */
#define LIST_ENTRY_SPAN 512
static int read_list_entry(hl_sampler *e, uintptr_t tstate, long *native_id, uintptr_t *next) {
    const hl_layout *l = &e->walker.layout;
    size_t id_at = l->has_native_thread_id ? l->tstate_native_thread_id : l->tstate_thread_id;
    size_t low = id_at < l->tstate_next ? id_at : l->tstate_next;
    size_t high = (id_at > l->tstate_next ? id_at : l->tstate_next) + sizeof(uintptr_t);
    uint8_t span[LIST_ENTRY_SPAN];
    unsigned long id = 0;
    if (high - low <= sizeof(span)) {
        if (hl_memread(span, tstate + low, high - low) != 0) return -1;
        memcpy(next, span + (l->tstate_next - low), sizeof(*next));
        memcpy(&id, span + (id_at - low), sizeof(id));
    } else if (hl_memread_ptr(next, tstate + l->tstate_next) != 0 ||
               hl_memread(&id, tstate + id_at, sizeof(id)) != 0) {
        return -1;
    }
    if (l->has_native_thread_id) {
        *native_id = (long)id;
        return 0;
    }
    int tid = 0; /* id is the thread's pthread_t: the kernel id is inside it (above) */
    if (e->pthread_tid_offset >= 0 && id != 0 &&
        hl_memread(&tid, (uintptr_t)id + (uintptr_t)e->pthread_tid_offset, sizeof(tid)) != 0)
        return -1;
    *native_id = tid;
    return 0;
}

/* Marks thread `index` seen in this tick's list (e->seen grows with the threads, kept from tick
 * to tick: a tick allocates nothing). Returns 0, or -1 when out of memory. */
static int mark_seen(hl_sampler *e, size_t index) {
    if (index >= e->seen_capacity) {
        size_t capacity = e->seen_capacity ? e->seen_capacity : 64;
        while (capacity <= index) capacity *= 2;
        uint8_t *grown = realloc(e->seen, capacity);
        if (grown == NULL) return -1;
        memset(grown + e->seen_capacity, 0, capacity - e->seen_capacity);
        e->seen = grown;
        e->seen_capacity = capacity;
    }
    e->seen[index] = 1;
    return 0;
}

/* Re-reads the interpreter's thread list, every tick: a thread state's id changes when the
 * thread it was made for starts, which leaves no other trace in the list. */
static void refresh_threads(hl_sampler *e) {
    const hl_layout *l = &e->walker.layout;
    uintptr_t head;
    if (hl_memread_ptr(&head, l->interp + l->interp_threads_head) != 0) return;

    if (e->seen != NULL)
        memset(e->seen, 0, e->nthreads < e->seen_capacity ? e->nthreads : e->seen_capacity);
    size_t scanned = 0;
    for (uintptr_t tstate = head; tstate != 0 && scanned < MAX_THREADS_SCANNED; scanned++) {
        long native_id = 0;
        uintptr_t next = 0;
        if (read_list_entry(e, tstate, &native_id, &next) != 0 || native_id < 0)
            return; /* the list changed under us; try again next tick */
        if (native_id != 0) { /* 0: created but not started yet */
            hl_thread *t = hl_sampler_find_thread(e, native_id);
            if (t != NULL) t->tstate = tstate; /* the list runs newest to oldest */
            else if (add_thread(e, tstate, native_id) == 0) t = &e->threads[e->nthreads - 1];
            if (t != NULL && mark_seen(e, (size_t)(t - e->threads)) != 0) return;
        }
        tstate = next;
    }
    for (size_t i = 0; i < e->nthreads; i++)
        if (e->threads[i].alive && (i >= e->seen_capacity || !e->seen[i]))
            forget_thread(e, &e->threads[i]);
}

/* ---- event loop waits (asyncwait.h) ---------------------------------------------------- */

/* What a function is to an event loop, by its file and qualified name; worked out once per
 * function id. */
enum { LOOP_UNKNOWN = 0, LOOP_OTHER, LOOP_RUN_ONCE, LOOP_SELECT, LOOP_RUNNER };

static int ends_with(const char *text, const char *end) {
    size_t n = strlen(text), m = strlen(end);
    return n >= m && strcmp(text + n - m, end) == 0;
}

static int function_kind(hl_sampler *e, uint32_t function) {
    const hl_stats *s = e->stats;
    if (function >= s->nfunctions) return LOOP_OTHER;
    if (function >= e->function_kinds_capacity) {
        size_t capacity = e->function_kinds_capacity ? e->function_kinds_capacity : 256;
        while (capacity <= function) capacity *= 2;
        uint8_t *grown = realloc(e->function_kinds, capacity);
        if (grown == NULL) return LOOP_OTHER;
        memset(grown + e->function_kinds_capacity, LOOP_UNKNOWN,
               capacity - e->function_kinds_capacity);
        e->function_kinds = grown;
        e->function_kinds_capacity = capacity;
    }
    uint8_t *kind = &e->function_kinds[function];
    if (*kind == LOOP_UNKNOWN) {
        const hl_function *f = &s->functions[function];
        const char *path = f->file < s->nfiles ? s->files[f->file].path : "";
        const char *qualname = f->qualname != NULL ? f->qualname : "";
        const char *name = f->name != NULL ? f->name : "";
        if (ends_with(path, "asyncio/base_events.py") && strcmp(name, "_run_once") == 0)
            *kind = LOOP_RUN_ONCE;
        else if (ends_with(path, "/selectors.py") && strcmp(name, "select") == 0)
            *kind = LOOP_SELECT;
        else if (ends_with(path, "asyncio/runners.py") &&
                 (strcmp(qualname, "run") == 0 || strcmp(qualname, "Runner.run") == 0))
            *kind = LOOP_RUNNER; /* a loop written in C (uvloop) waits below asyncio.run */
        else *kind = LOOP_OTHER;
    }
    return *kind;
}

/* Whether a blocked thread's stack is an event loop waiting for events: the selector under
 * BaseEventLoop._run_once, _run_once itself (a selector written in C), or asyncio.run's runner
 * calling a loop written in C. Returns the position of the loop's own frame in frames[]
 * (innermost first), or -1. */
static int loop_frame(hl_sampler *e, const hl_sampled_stack *stack) {
    if (stack->inner < 1) return -1;
    int innermost = function_kind(e, stack->frames[0].function);
    if (innermost == LOOP_RUN_ONCE || innermost == LOOP_RUNNER) return 0;
    if (innermost == LOOP_SELECT && stack->inner >= 2 &&
        function_kind(e, stack->frames[1].function) == LOOP_RUN_ONCE)
        return 1;
    return -1;
}

static int same_wait(const hl_loop_wait *w, const uint64_t *keys, uint32_t length,
                     const hl_frame *target) {
    return w->length == length && memcmp(w->keys, keys, length * sizeof(*keys)) == 0 &&
           w->target.file == target->file && w->target.line == target->line &&
           w->target.function == target->function;
}

/* Charges a wait where it was sampled, as sample_thread charges any sample. */
static void charge_loop_wait(hl_sampler *e, const hl_loop_wait *wait) {
    const hl_frame *target = &wait->target;
    if (hl_stats_charge_line(e->stats, target->file, target->line, target->function, HL_SYSTEM,
                             wait->ns) != 0) {
        e->lost_ns += wait->ns;
        return;
    }
    uint32_t stack_id;
    if (hl_stats_charge_stack(e->stats, wait->thread, wait->keys, wait->length, HL_SYSTEM, wait->ns,
                              &stack_id) != 0)
        e->stats->stacks_dropped_ns += wait->ns;
}

/* Holds back dt of the main thread's wait; 0, or -1 when it must be charged as sampled. */
static int hold_loop_wait(hl_sampler *e, hl_thread *t, uint32_t thread_index, const uint64_t *keys,
                          uint32_t length, uint32_t loop_depth, const hl_frame *target,
                          uint64_t dt) {
    hl_loop_wait *w = t->loop_wait;
    if (w == NULL) {
        w = t->loop_wait = calloc(1, sizeof(*w));
        if (w == NULL) return -1;
    }
    if (w->ns != 0 && !same_wait(w, keys, length, target)) { /* another wait, not asked yet */
        charge_loop_wait(e, w);
        w->ns = 0;
    }
    if (w->ns == 0) {
        w->thread = thread_index;
        w->length = length;
        w->loop_depth = loop_depth;
        w->target = *target;
        memcpy(w->keys, keys, length * sizeof(*keys));
    }
    w->ns += dt;
    e->loop_wait_ns += dt;
    e->on_loop_wait();
    return 0;
}

int hl_sampler_take_loop_wait(hl_sampler *e, long native_id, hl_loop_wait *out) {
    hl_thread *t = hl_sampler_find_thread(e, native_id);
    if (t == NULL || t->loop_wait == NULL || t->loop_wait->ns == 0) return 0;
    *out = *t->loop_wait;
    t->loop_wait->ns = 0;
    return 1;
}

void hl_sampler_charge_loop_wait(hl_sampler *e, const hl_loop_wait *wait) {
    charge_loop_wait(e, wait);
}

void hl_sampler_flush_loop_waits(hl_sampler *e) {
    for (size_t i = 0; i < e->nthreads; i++) {
        hl_loop_wait *w = e->threads[i].loop_wait;
        if (w != NULL && w->ns != 0) {
            charge_loop_wait(e, w);
            w->ns = 0;
        }
    }
}

/* ---- one tick -------------------------------------------------------------------------- */

/* The keys of the stack a sample is recorded under, outermost first (the table's order):
 * the outer part, the marker of the elided frames, the inner part. A partial stack would be
 * rooted wrongly: its time goes to a one-frame stack of the line charged. */
static uint32_t stack_keys(const hl_sampled_stack *stack, int depth, int complete,
                           const hl_frame *target, uint64_t *keys) {
    uint32_t length = 0;
    if (!complete) {
        if (target != NULL) keys[length++] = HL_FRAME_KEY(target->function, target->line);
        return length;
    }
    for (int i = depth - 1; i >= stack->inner; i--)
        keys[length++] = HL_FRAME_KEY(stack->frames[i].function, stack->frames[i].line);
    if (stack->elided) {
        uint32_t marker = stack->bottomless    ? HL_ELIDED_OPEN
                          : stack->elided_kept ? HL_ELIDED_KEPT
                                               : HL_ELIDED_LOST;
        keys[length++] = HL_FRAME_KEY(marker, stack->elided);
    }
    for (int i = stack->inner - 1; i >= 0; i--)
        keys[length++] = HL_FRAME_KEY(stack->frames[i].function, stack->frames[i].line);
    return length;
}

/* ---- an idle thread's stack ------------------------------------------------------------ */

/* A thread's stack changes only while the thread runs, and its CPU clock counts every
 * nanosecond it runs. A stack read after the clock stood at c is therefore still the thread's
 * stack at any later moment the clock still reads c: a thread that has not run since its
 * previous sample (blocked in a wait, a lock, a sleep, or queued for a CPU) is not read again,
 * its memo is used instead. Of the threads a program has, most wait most of the time (a
 * pool's helper threads, executors, a DataLoader's): each sample of one would cost two or
 * three process_vm_readv calls and the decoding of its frames, and the memo costs neither. Only a
 * complete stack is kept (a torn walk is read again next time), with the thread state it was
 * read from; the memo goes when the thread does, and with the results (hl_sampler_reset). */
static void remember_stack(hl_thread *t, const hl_sampled_stack *stack, int depth, int complete) {
    t->memo_valid = 0;
    if (depth < 0 || !complete) return;
    if (t->memo == NULL || depth > t->memo_capacity) {
        int capacity = depth < 16 ? 16 : depth;
        hl_sampled_stack *grown = realloc(t->memo, offsetof(hl_sampled_stack, frames) +
                                                       (size_t)capacity * sizeof(hl_frame));
        if (grown == NULL) return;
        t->memo = grown;
        t->memo_capacity = capacity;
    }
    memcpy(t->memo, stack, offsetof(hl_sampled_stack, frames) + (size_t)depth * sizeof(hl_frame));
    t->memo_tstate = t->tstate;
    t->memo_valid = 1;
}

/* Charges ns of run-queue wait where the sample charges its time (below): the line and its
 * stack, or the thread's unattributed time. */
static void charge_cpu_wait(hl_sampler *e, hl_thread *t, uint32_t thread_index,
                            const hl_frame *target, int complete, const uint64_t *keys,
                            uint32_t length, uint64_t ns, uint32_t label) {
    if (target == NULL && complete) {
        t->unattributed_ns += ns;
        hl_labels_charge(label, HL_CPU_WAIT, ns, HL_NO_LINE);
    } else if (target != NULL && hl_stats_charge_line(e->stats, target->file, target->line,
                                                      target->function, HL_CPU_WAIT, ns) == 0) {
        t->ns[HL_CPU_WAIT] += ns;
        if (label != HL_NO_LABEL) {
            int64_t line = hl_stats_line(e->stats, target->file, target->line, target->function);
            hl_labels_charge(label, HL_CPU_WAIT, ns, line >= 0 ? (uint32_t)line : HL_NO_LINE);
        }
    } else {
        e->lost_ns += ns; /* in no line: in no stack either */
        return;
    }
    uint32_t stack_id;
    if (length == 0) {
        e->stats->stacks_dropped_ns += ns;
        e->stats->stacks_frameless_ns += ns;
    } else if (hl_stats_charge_stack(e->stats, thread_index, keys, length, HL_CPU_WAIT, ns,
                                     &stack_id) != 0) {
        e->stats->stacks_dropped_ns += ns;
    }
}

static void sample_thread(hl_sampler *e, hl_thread *t, uint32_t thread_index, uint64_t dt) {
    hl_sampled_stack stack;
    uint64_t keys[HL_MAX_DEPTH];
    uint64_t c1, c2;

    if (cpu_now(t, &c1) != 0) { /* the thread has exited */
        forget_thread(e, t);
        return;
    }
    /* Not one ns of CPU since the previous sample: its stack is that sample's (above); and
     * if that sample found it blocked, it is still blocked or just waking (see the header). */
    int idle = t->has_last_cpu && c1 == t->last_cpu_ns;
    int still_waking = idle && t->was_waiting;
    /* It ran since: a run-queue wait it had meanwhile has ended, and is counted ("Waiting for
     * a CPU" above). */
    if (!idle) {
        if (e->schedstat_error == 0) settle_wait(e, t, read_run_delay(e, t, c1));
        forget_unrun(t);
    }
    if (t->has_last_cpu && c1 >= t->last_cpu_ns) t->cpu_ns += c1 - t->last_cpu_ns;
    t->last_cpu_ns = c1;
    t->has_last_cpu = 1;

    const hl_sampled_stack *s = &stack;
    int complete = 0, depth = -1;
    int reused = idle && t->memo_valid && t->memo_tstate == t->tstate;
    if (reused) {
        s = t->memo;
        depth = s->depth;
        complete = 1;
        e->stacks_reused++;
    } else {
        /* A walk races the thread: a deep stack of quick calls (copy.deepcopy) can return past
         * a frame while it is read. A torn walk is tried again, a few times. */
        for (int attempt = 0; attempt < WALK_ATTEMPTS && !complete; attempt++) {
            depth = hl_walk_sample(&e->walker, t->tstate, &stack);
            complete = depth >= 0 && stack.complete;
        }
        remember_stack(t, &stack, depth, complete);
    }
    int flags = depth >= 0 ? s->leaf_flags : 0;
    uintptr_t gil_holder = hl_compat_gil_holder();
    int stat_fd = open_stat(e, t);
    if (reused) {
        c2 = c1; /* nothing was read since c1: no second clock reading to compare with */
    } else if (cpu_now(t, &c2) != 0) {
        done_with_stat(t, stat_fd);
        forget_thread(e, t);
        return;
    }
    int blocked = c2 == c1 && (still_waking || !runnable(stat_fd));
    done_with_stat(t, stat_fd);
    if (depth < 0) depth = 0;

    int category;
    int holds_gil = gil_holder == t->tstate;
    if (blocked && !e->waiting_for_lock(t->native_id)) category = HL_SYSTEM;
    else if (flags & HL_OP_CALL) category = HL_NATIVE;
    else if (holds_gil) category = HL_PYTHON;
    else if (flags & HL_OP_SWITCH) category = HL_PYTHON; /* handing the GIL over */
    else if ((flags & HL_OP_SWITCH_CONTENDED) && gil_holder != 0) category = HL_PYTHON; /* to it */
    else category = HL_NATIVE; /* an operator running C code that released the GIL */
    t->was_waiting = category == HL_SYSTEM;
    /* The innermost region or module open on the thread (labels.h) gets this sample too. */
    uint32_t label = hl_labels_innermost(t->native_id, &t->label_slot);

    /* The line charged: the innermost user frame, wherever it is on the stack (the walk finds
     * it among elided frames too). Where the stack could not be read to a user frame, the
     * time goes to the deepest user line that could be read: this sample's, else the thread's
     * previous sample's. Only a thread never read is lost. */
    const hl_frame *target = depth > 0 && s->has_user ? &s->user : NULL;
    if (target != NULL) {
        t->last_user = *target;
        t->has_last_user = 1;
    } else if (!complete && t->has_last_user) {
        target = &t->last_user;
    }
    /* The stack the time goes to, outermost first: the outer part, the marker of the elided
     * frames, the inner part. */
    uint32_t length = stack_keys(s, depth, complete, target, keys);

    /* The main thread's event loop waiting for events: held back, to be charged to the awaits
     * its tasks are suspended at (asyncwait.h). A wait for a CPU measured meanwhile is the
     * loop's wake-up, part of that wait: held with it. */
    int at = -1;
    if (e->on_loop_wait != NULL && category == HL_SYSTEM && complete && target == &s->user)
        at = loop_frame(e, s);
    if (at >= 0 && t->main && at < s->inner &&
        hold_loop_wait(e, t, thread_index, keys, length, length - (uint32_t)at, target, dt) == 0) {
        t->cpu_wait_due_ns -= t->cpu_wait_due_ns < dt ? t->cpu_wait_due_ns : dt;
        t->ns[category] += dt;
        hl_labels_charge(label, category, dt, HL_NO_LINE);
        hl_native_thread_tick(&t->native, t->native_id, HL_NO_LINE, HL_NO_STACK, dt);
        return;
    }

    /* The run-queue wait measured since, up to the whole sample ("Waiting for a CPU"). */
    uint64_t wait = t->cpu_wait_due_ns < dt ? t->cpu_wait_due_ns : dt;
    if (wait != 0) {
        t->cpu_wait_due_ns -= wait;
        charge_cpu_wait(e, t, thread_index, target, complete, keys, length, wait, label);
        dt -= wait;
        if (dt == 0) {
            hl_native_thread_tick(&t->native, t->native_id, HL_NO_LINE, HL_NO_STACK, 0);
            return;
        }
    }
    if (at >= 0 && !t->main) e->other_loop_wait_ns += dt;

    int64_t line_id = -1;
    if (target == NULL && complete) {
        t->unattributed_ns += dt;
        hl_labels_charge(label, category, dt, HL_NO_LINE);
    } else if (target != NULL && hl_stats_charge_line(e->stats, target->file, target->line,
                                                      target->function, category, dt) == 0) {
        t->ns[category] += dt;
        /* the line's id, for the native functions under it (the cell above made it) */
        line_id = hl_stats_line(e->stats, target->file, target->line, target->function);
        hl_labels_charge(label, category, dt, line_id >= 0 ? (uint32_t)line_id : HL_NO_LINE);
    } else {
        hl_native_thread_tick(&t->native, t->native_id, HL_NO_LINE, HL_NO_STACK, 0);
        e->lost_ns += dt; /* in no line: in no stack either */
        return;
    }

    /* From here dt is in a line or unattributed, so it goes to exactly one stack or to
     * stacks_dropped_ns: the stacks add up to the lines' and unattributed time, to the ns. */
    uint32_t stack_id = HL_NO_STACK;
    if (length == 0) { /* no frame to record (a thread with no Python frame on its stack) */
        e->stats->stacks_dropped_ns += dt;
        e->stats->stacks_frameless_ns += dt;
    } else if (hl_stats_charge_stack(e->stats, thread_index, keys, length, category, dt,
                                     &stack_id) != 0) {
        e->stats->stacks_dropped_ns += dt; /* no memory for the stack */
    }
    /* Not run since the sample before: a wait for a CPU, if that is what kept it, is measured
     * when it runs again, and then moved out of this charge (settle_wait). */
    if (idle && line_id >= 0) {
        int64_t cell = hl_stats_cell(e->stats, target->file, target->line, target->function);
        if (cell != t->unrun_cell || stack_id != t->unrun_stack || label != t->unrun_label) {
            forget_unrun(t);
            t->unrun_cell = cell;
            t->unrun_stack = stack_id;
            t->unrun_label = label;
        }
        t->unrun_ns[category] += dt;
    }
    /* The native functions the time went to (native.c): the samples since the last tick,
     * under the line and under the stack. */
    int native = category == HL_NATIVE;
    /* (A thread that has not run since was sampled by no one: its time may yet turn out to be
     * a wait for a CPU, settle_wait, so it names no native function.) */
    hl_native_thread_tick(&t->native, t->native_id,
                          native && line_id >= 0 ? (uint32_t)line_id : HL_NO_LINE,
                          native ? stack_id : HL_NO_STACK, idle ? 0 : dt);
}

static int is_python_thread(void *sampler, long native_id) {
    return hl_sampler_find_thread(sampler, native_id) != NULL;
}

static void tick(hl_sampler *e, uint64_t dt) {
    refresh_threads(e);
    for (size_t i = 0; i < e->nthreads; i++)
        if (e->threads[i].alive) sample_thread(e, &e->threads[i], (uint32_t)i, dt);
    /* the threads without a thread state (BLAS pools, C threads): their native time */
    hl_native_others_tick(e->thread_tid, is_python_thread, e);
    e->first_tick_done = 1;
    e->samples++;
    e->sampled_ns += dt;
    e->after_tick(hl_now_ns());
}

/* ---- a descriptor table of its own --------------------------------------------------- */

/* The sampler opens files while the program runs: /proc/self/task/ID/stat for each thread at
 * each tick, and heatline ctl's files (control.c) every 100 ms. In the program's descriptor
 * table every open, however brief, takes the lowest free number, and the program may be using
 * that number at the same moment without having opened it: os.dup2(fd, n) onto a free n fails
 * with EBUSY while our open is installing its file there, or succeeds and replaces our file, and
 * then our close closes the program's descriptor (EBADF later; CPython's multiprocessing tests
 * pass descriptors that way). No order of our own calls closes that window, since the numbers
 * are one namespace shared with the program. So the thread first gives itself a descriptor
 * table of its own: the numbers it opens and closes from then on are invisible to the program,
 * and the program's numbers are not in it.
 *
 * That table must also start empty: a copy of the program's descriptors would keep its files
 * open after the program closed them (a pipe's reader would wait for an EOF until the sampler
 * ends, a socket would stay connected). close_range(0, ~0U, CLOSE_RANGE_UNSHARE) (Linux 5.9)
 * does both in one call, and copies nothing when the range covers every descriptor. Older
 * kernels have unshare(CLONE_FILES), which copies the table; the copies are then closed, listed
 * through /proc (the listing of this thread shows its own table), so for those microseconds,
 * once per sampler start, the program's files are held open by the copy too. Closing a copy
 * releases none of the program's fcntl() record locks: those belong to the table that took
 * them. Where neither is allowed (a seccomp profile refusing both, or an old kernel without
 * /proc), the sampler stays in the program's table as before, its descriptors living only
 * within a tick, and the profile warns that the program can collide with them.
 *
 * What runs on this thread runs in this table: the parts' wake and tick (control.c's files; the
 * GPU part's NVML queries, whose driver descriptors are the program's, run on a thread of the
 * GPU part's own instead: gpu.c) and the memory reader, whose fallback pipe is made here anew
 * (memread.c). A thread this thread created shares its table: the only one is heatline
 * attach's stopping thread (detach.c), which therefore must not use the program's descriptors
 * by number (serve.py's close checks; docs/design-live.md, "heatline attach"). After
 * fork() only the forking thread, one of the program's, goes on; the sampler started again in
 * the child or in the parent runs this again. Descriptor 2 in this table is not the program's
 * stderr (holding it would keep a daemon's reader from its EOF): a report written there from
 * this thread (a sanitizer's, faulthandler's) does not reach it; ASAN_OPTIONS=log_path=FILE
 * opens its file by name. */

#ifndef CLOSE_RANGE_UNSHARE
#define CLOSE_RANGE_UNSHARE (1U << 1)
#endif
/* Headers older than the call (glibc < 2.34's, a manylinux image's) lack its number, which
 * since Linux 5.1 is the same on these architectures. */
#if !defined(SYS_close_range) &&                                                                   \
    ((defined(__x86_64__) && !defined(__ILP32__)) || defined(__i386__) || defined(__aarch64__))
#define SYS_close_range 436
#endif

static int close_range_call(unsigned first, unsigned last, unsigned flags) {
#ifdef SYS_close_range
    return (int)syscall(SYS_close_range, first, last, flags);
#else
    (void)first;
    (void)last;
    (void)flags;
    errno = ENOSYS;
    return -1;
#endif
}

/* Closes every descriptor of the thread's (private) table, as /proc lists it. A copy of a
 * full table leaves no number for the listing itself: one descriptor is closed first then. */
static void close_listed(const char *path) {
    DIR *dir = opendir(path);
    if (dir == NULL && errno == EMFILE) {
        struct rlimit limit;
        if (getrlimit(RLIMIT_NOFILE, &limit) == 0)
            for (rlim_t fd = 0; fd < limit.rlim_cur && close((int)fd) != 0; fd++) continue;
        dir = opendir(path);
    }
    if (dir == NULL) return;
    int own = dirfd(dir);
    for (struct dirent *entry; (entry = readdir(dir)) != NULL;) {
        char *end;
        long fd = strtol(entry->d_name, &end, 10);
        /* the listing goes by number: closing what it listed already moves nothing */
        if (end != entry->d_name && *end == '\0' && fd != own) close((int)fd);
    }
    closedir(dir);
}

/* Makes the calling thread's descriptor table its own and empty. Returns 0, or -1 where it is
 * still the program's. */
static int own_descriptor_table(void) {
    if (close_range_call(0, ~0U, CLOSE_RANGE_UNSHARE) == 0) return 0;
    char path[64];
    snprintf(path, sizeof(path), "/proc/self/task/%d/fd", (int)gettid());
    /* Copies are made only where they can be found again to be closed (access opens nothing). */
    if (access(path, R_OK) != 0 || unshare(CLONE_FILES) != 0) return -1;
    if (close_range_call(0, ~0U, 0) != 0) close_listed(path);
    return 0;
}

static unsigned char tid_matches[TID_SCAN_BYTES / sizeof(int)];

static void *sampler_main(void *arg) {
    hl_sampler *e = arg;
    e->on_thread_start(); /* the engine marks it as its own: nothing it allocates is sampled */
    __atomic_store_n(&e->thread_tid, (int)gettid(), __ATOMIC_RELEASE);
    int own_table = own_descriptor_table() == 0; /* before anything it opens */
    e->own_table = own_table;
    if (own_table) hl_memread_own_table();
    hl_lock_acquire(e->lock);
    hl_native_set_private_table(own_table);
    if (!own_table) e->shared_descriptors = 1; /* for the session: any of its starts */
    if (!e->walker.layout.has_native_thread_id) {
        tid_offsets(tid_matches); /* the starting thread scanned first */
        e->pthread_tid_offset = -1;
        for (size_t i = 0; i < sizeof(tid_matches) && e->pthread_tid_offset < 0; i++)
            if (tid_matches[i]) e->pthread_tid_offset = (long)(i * sizeof(int));
    }
    /* The first tick charges the time since the session started, not since this thread first
     * ran: on a busy machine a new thread can wait for a CPU for a large part of a second, and
     * that time, uncharged, would be missing from the profile without a word (max_gap_ns says
     * how long it was). A thread started again after a fork starts from its own start. */
    uint64_t last = e->started_ns != 0 ? e->started_ns : hl_now_ns();
    e->started_ns = 0;
    uint64_t deadline = hl_now_ns() + next_interval(e);
    while (!e->stop_requested) {
        struct timespec until = {(time_t)(deadline / 1000000000u), (long)(deadline % 1000000000u)};
        int rc = hl_lock_wait(e->lock, &e->wake, &until);
        if (e->stop_requested) break;
        uint64_t now = hl_now_ns();
        if (rc != ETIMEDOUT && now < deadline) continue; /* spurious wake-up */
        if (e->on_wake) e->on_wake(now); /* heatline ctl on/off: applied before this tick */
        if (!__atomic_load_n(&e->paused, __ATOMIC_RELAXED)) {
            /* A long gap is the sampler held up (not scheduled, or waiting for the lock): time
             * whose state was read once, at its end. Reported so that it can be seen. */
            if (now - last > e->max_gap_ns) e->max_gap_ns = now - last;
            if (now - last > 2 * e->sampling_interval_ns) {
                e->long_gaps++;
                e->long_gap_ns += now - last;
            }
            tick(e, now - last);
            uint64_t took = hl_now_ns() - now;
            if (took > e->max_tick_ns) e->max_tick_ns = took;
        } else {
            hl_native_others_rebase(); /* their time while paused is charged to no one */
            rebase_waits(e);
        }
        hl_sigterm_tick();
        last = now;
        deadline = hl_now_ns() + next_interval(e);
    }
    /* The time since the last tick goes uncharged: counted as a gap, so that the bound a
     * gap sets on what a line may miss covers the end of the run too. */
    uint64_t end = hl_now_ns();
    if (!__atomic_load_n(&e->paused, __ATOMIC_RELAXED) && end - last > e->max_gap_ns)
        e->max_gap_ns = end - last;
    /* A thread that ran since the last tick may have ended a wait that the samples before
     * charged (a process about to exit): moved out of them as at a tick. */
    for (size_t i = 0; i < e->nthreads; i++) {
        hl_thread *t = &e->threads[i];
        uint64_t c1;
        if (t->alive && !__atomic_load_n(&e->paused, __ATOMIC_RELAXED) && e->schedstat_error == 0 &&
            t->has_last_cpu && cpu_now(t, &c1) == 0 && c1 != t->last_cpu_ns)
            settle_wait(e, t, read_run_delay(e, t, c1));
    }
    /* The events' descriptors are in this thread's table: closed here, reopened by the next
     * sampler thread (after a fork, or a new session). */
    for (size_t i = 0; i < e->nthreads; i++) {
        hl_native_thread_close(&e->threads[i].native);
        close_stat(&e->threads[i]);
        close_schedstat(&e->threads[i]);
    }
    hl_native_others_close();
    hl_lock_release(e->lock);
    return NULL;
}

/* ---- started and joined by the engine ------------------------------------------------- */

/* The calling thread's run-queue wait so far, at the session's start (an open, a read and a
 * close on the starting thread, a moment after which the sampler's first tick covers). */
static void note_start_run_delay(hl_sampler *e) {
    e->has_start_run_delay = 0;
    e->start_tid = (long)gettid();
    int fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    char buffer[96];
    ssize_t n = pread(fd, buffer, sizeof(buffer) - 1, 0);
    close(fd);
    if (n <= 0) return;
    buffer[n] = '\0';
    e->has_start_run_delay = parse_run_delay(buffer, 0, &e->start_run_delay_ns) == 0;
}

void hl_sampler_prepare(hl_sampler *e) {
    e->stop_requested = 0;
    e->first_tick_done = 0;
    note_start_run_delay(e);
    e->started_ns = hl_now_ns();
    e->rng = hl_now_ns() ^ ((uint64_t)getpid() << 32) ^ 0x9E3779B97F4A7C15ULL;
    if (e->rng == 0) e->rng = 1;

    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&e->wake, &attr);
    pthread_condattr_destroy(&attr);

    if (!e->walker.layout.has_native_thread_id) {
        memset(tid_matches, 1, sizeof(tid_matches));
        tid_offsets(tid_matches);
    }
}

void hl_sampler_release(hl_sampler *e) {
    pthread_cond_destroy(&e->wake);
}

/* pthread_join() returns once the kernel has cleared the thread's id, which is a little before
 * the process stops counting the thread (/proc/self/stat, /proc/self/task). CPython 3.12+
 * counts threads right before fork() and warns when there is more than one, so the fork
 * handler waits, a bounded 100 ms at most, until the joined thread is no longer listed (without
 * the wait, a DeprecationWarning can reach the program's output under load). */
void hl_sampler_wait_until_gone(int tid) {
    if (tid <= 0) return;
    char path[64];
    snprintf(path, sizeof(path), "/proc/self/task/%d", tid);
    for (int i = 0; i < 1000 && access(path, F_OK) == 0; i++) {
        struct timespec pause = {0, 100000};
        nanosleep(&pause, NULL);
    }
}

int hl_sampler_spawn(hl_sampler *e) {
    /* The sampler must never receive the program's signals: block them all in it. */
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &previous);
    e->thread_tid = 0;
    int err = pthread_create(&e->thread, NULL, sampler_main, e);
    pthread_sigmask(SIG_SETMASK, &previous, NULL);
    return -err;
}

void hl_sampler_join(hl_sampler *e) {
    e->stop_requested = 1;
    pthread_cond_signal(&e->wake);
    hl_lock_release(e->lock);
    pthread_join(e->thread, NULL);
    hl_sampler_wait_until_gone(__atomic_load_n(&e->thread_tid, __ATOMIC_ACQUIRE));
    hl_lock_acquire(e->lock);
    e->stop_requested = 0;
}

void hl_sampler_reset(hl_sampler *e) {
    for (size_t i = 0; i < e->nthreads; i++) { /* results go */
        free(e->threads[i].loop_wait);
        free(e->threads[i].memo);
    }
    /* Not on the sampler thread: the events were closed when it ended (or, in a fork child,
     * were never this process's). */
    for (size_t i = 0; i < e->nthreads; i++) {
        e->threads[i].alive = 0;
        hl_native_thread_forget(&e->threads[i].native);
        e->threads[i].stat_fd = -1;
        e->threads[i].schedstat_fd = -1;
    }
    free(e->threads);
    e->threads = NULL;
    e->nthreads = e->threads_capacity = 0;
    free(e->seen);
    e->seen = NULL;
    e->seen_capacity = 0;
    e->samples = e->sampled_ns = e->lost_ns = 0;
    e->stacks_reused = 0;
    e->max_gap_ns = e->max_tick_ns = 0;
    e->long_gaps = e->long_gap_ns = 0;
    e->shared_descriptors = 0;
    e->schedstat_error = 0;
    e->schedstat_tid = 0;
    free(e->function_kinds); /* function ids are the tables', cleared with them */
    e->function_kinds = NULL;
    e->function_kinds_capacity = 0;
    e->loop_wait_ns = e->other_loop_wait_ns = 0;
}
