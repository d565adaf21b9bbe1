/* memhooks.c: the memory part's hooks, where the program's allocations, frees and copies are
 * seen and sampled; what a sampled event is charged to is memory.c's. See memhooks.h.
 *
 * Sampling by bytes. Every thread keeps a countdown of bytes. Allocations of at least W bytes
 * (the window) are always recorded, with their exact size. Smaller ones are charged against the
 * countdown; each time it runs out, a sample point falls inside the allocation that exhausted it
 * and the countdown is rewound by a fresh distance drawn uniformly from [W/2, 3W/2). An
 * allocation containing K points is recorded with weight K x W (K is 0 for most, 1 for some).
 *
 * Why this is unbiased: the points form a stationary renewal process over the thread's stream
 * of small-allocation bytes with mean spacing W, and for such a process the expected number of
 * points in any stretch of s bytes is s / W, whatever s. So E[K x W] = s for every small
 * allocation, and a line's estimate (the sum of its weights) has the line's true total as its
 * expectation. Random spacing (rather than exactly W) keeps the points from locking onto a
 * repeating allocation pattern; a spread of only +-W/2 (rather than exponential spacing) keeps
 * the variance low: a burst of N bytes gets N/W points, give or take about sqrt(N/W/12) + 1,
 * against sqrt(N/W) for a Poisson process. Large allocations, which dominate footprints in ML
 * code, carry no sampling error at all.
 *
 * Copies use a second countdown over memcpy/memmove sizes, with the same rule.
 *
 * No double counting: the Python hooks sit on the MEM and OBJ domains, whose allocator
 * (pymalloc) gets its arenas from mmap inside the interpreter and its large blocks from the RAW
 * domain; the RAW hooks ignore calls made from inside a MEM/OBJ hook (a thread-local depth),
 * and count the rest (C code's own PyMem_RawMalloc buffers) as native. The interpreter's own
 * objects are never redirected for the malloc family or mmap (got.c patches only copies and
 * dlopen there), so the RAW domain's malloc is not seen a second time.
 *
 * Frees: every free the hooks see asks the live table (livetable.h) without a lock; only a
 * listed block goes on to be charged. A sampled block is the block the program would have got
 * without heatline, at the same address: see "Python allocator hooks" below for why.
 *
 * Reentrancy: a thread-local flag marks a thread that is inside the engine (the sampler
 * thread, a hook's slow path, a reader holding the engine lock); its allocations pass through
 * unsampled, so a hook never waits for a lock its own thread holds.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h> /* first, as CPython requires; it also defines _GNU_SOURCE */

#include "memhooks.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "debug.h"
#include "got.h"
#include "livetable.h"
#include "stats.h"

/* ---- per-thread state -------------------------------------------------------------------- */

typedef struct hl_thread_memory {
    int64_t countdown;      /* bytes of small allocations until the next sample point */
    int64_t copy_countdown; /* the same for copies */
    uint64_t rng;
    int ready;
    int inside; /* > 0: this thread is inside the engine */
    int in_python_allocator; /* > 0: inside a MEM/OBJ hook (pymalloc may call RAW) */
} hl_thread_memory;

static __thread hl_thread_memory tls __attribute__((tls_model("initial-exec")));

/* ---- the hooks' state ----------------------------------------------------------------------- */

static struct {
    int active; /* read by the slow paths and frees: relaxed atomic */
    uint64_t sampling_window_bytes; /* mean bytes between samples */
    const hl_memhooks_sink *sink;
    int python_hooked;
    PyMemAllocatorEx python_previous[3]; /* MEM, OBJ, RAW: the allocators found in place */
    /* What _PyMem_GetCurrentAllocatorName said just before our Python hooks went in. */
    const char *python_allocators_name;
} mem;
/* A distance drawn uniformly from [W/2, 3W/2). */
static int64_t next_distance(hl_thread_memory *m) {
    uint64_t w = mem.sampling_window_bytes;
    return (int64_t)(w / 2 + hl_next_random(&m->rng) % (w ? w : 1)) + 1;
}

static void thread_init(hl_thread_memory *m) {
    m->rng = hl_now_ns() ^ ((uint64_t)gettid() << 32) ^ (uintptr_t)m ^ 0x9E3779B97F4A7C15ULL;
    if (m->rng == 0) m->rng = 1;
    /* Start as if the process had been running: a uniform position within a spacing. */
    m->countdown = (int64_t)(hl_next_random(&m->rng) %
                             (mem.sampling_window_bytes ? mem.sampling_window_bytes : 1)) +
                   1;
    m->copy_countdown = (int64_t)(hl_next_random(&m->rng) %
                                  (mem.sampling_window_bytes ? mem.sampling_window_bytes : 1)) +
                        1;
    m->ready = 1;
}

/* ---- the hooks' fast paths ---------------------------------------------------------------- */

static inline int sampling(void) {
    return __atomic_load_n(&mem.active, __ATOMIC_RELAXED);
}

/* The weight to record for an event of `size` bytes, 0 for none, once its fast path (`size`
 * below the window taken off *countdown, still above 0 after) did not settle it: the countdown
 * ran out (`charged`: the fast path already took `size` off), or the event is large, or the
 * thread is new. Rewinds the countdown past every point that fell in the event.
 *
 * The fast paths do not look at whether sampling is on: while it is off (a fork child that
 * profiles nothing, a hook still being left after stop) they only count down, and this says 0.
 * A thread inside the engine records nothing and leaves its countdown run out: the points
 * owed go to its next allocation outside the engine. */
static uint64_t weigh(hl_thread_memory *m, int64_t *countdown, size_t size, int charged) {
    if (m->inside) return 0;
    if (!m->ready) {
        thread_init(m); /* a fresh countdown: what the fast path took off is gone with it */
        charged = 0;
    }
    if (size >= mem.sampling_window_bytes) return sampling() ? size : 0;
    if (!charged && (*countdown -= (int64_t)size) > 0) return 0;
    uint64_t points = 0;
    while (*countdown <= 0) {
        points++;
        *countdown += next_distance(m);
    }
    return sampling() ? points * mem.sampling_window_bytes : 0;
}

static void record_allocation(void *p, uint64_t weight, int kind) {
    tls.inside++;
    mem.sink->allocation((uintptr_t)p, weight, kind);
    tls.inside--;
}

/* The slow paths are out of line, and the fast paths below forced inline into each hook: left
 * to itself, gcc split on_allocation and called its countdown part on every allocation. */
static __attribute__((noinline)) void slow_allocation(void *p, size_t size, int kind) {
    uint64_t weight = weigh(&tls, &tls.countdown, size, size < mem.sampling_window_bytes);
    if (weight != 0 && p != NULL) record_allocation(p, weight, kind);
}

/* For hooks that call the allocator first (the native ones): p is the block, or NULL. */
static inline __attribute__((always_inline)) void on_allocation(void *p, size_t size, int kind) {
    hl_thread_memory *m = &tls;
    if (size < mem.sampling_window_bytes && (m->countdown -= (int64_t)size) > 0) return;
    slow_allocation(p, size, kind);
}

/* Out of line, so that the common case below needs no stack frame. */
static __attribute__((noinline)) void free_maybe_sampled(void *p) {
    if (!hl_live_contains((uintptr_t)p) || tls.inside) return;
    tls.inside++;
    mem.sink->free((uintptr_t)p);
    tls.inside--;
}

/* Must run before the block is released, so its address cannot be reused meanwhile. Nearly
 * every call ends at the filter. */
static inline __attribute__((always_inline)) void on_free(void *p) {
    if (!sampling()) return;
    if (p == NULL || !hl_live_may_contain((uintptr_t)p)) return;
    free_maybe_sampled(p);
}

static __attribute__((noinline)) void slow_copy(size_t size) {
    uint64_t weight = weigh(&tls, &tls.copy_countdown, size, size < mem.sampling_window_bytes);
    if (weight == 0) return;
    tls.inside++;
    mem.sink->copy(weight);
    tls.inside--;
}

/* A copy's fast path: 1 if the countdown settled it (not sampled); else slow_copy decides. */
static inline __attribute__((always_inline)) int copy_not_sampled(size_t size) {
    hl_thread_memory *m = &tls;
    return size < mem.sampling_window_bytes && (m->copy_countdown -= (int64_t)size) > 0;
}

/* ---- native hooks (installed in other libraries' GOTs) ------------------------------------- */

/* The redirected functions, listed once: X(name, symbol, return type, parameters, everywhere).
 * From this list come the pointers to the real functions (real_NAME, resolved by symbol), the
 * hooks' prototypes (hook_NAME) and the GOT table installed (got.h; hl_got_restore puts back
 * whatever was written). `everywhere`: copies and dlopen are redirected in the interpreter too;
 * allocations are seen there through the Python allocator hooks instead. */
#define HL_HOOKED_FUNCTIONS(X)                                                                     \
    X(malloc, "malloc", void *, (size_t), 0)                                                       \
    X(calloc, "calloc", void *, (size_t, size_t), 0)                                               \
    X(realloc, "realloc", void *, (void *, size_t), 0)                                             \
    X(free, "free", void, (void *), 0)                                                             \
    X(posix_memalign, "posix_memalign", int, (void **, size_t, size_t), 0)                         \
    X(aligned_alloc, "aligned_alloc", void *, (size_t, size_t), 0)                                 \
    X(memalign, "memalign", void *, (size_t, size_t), 0)                                           \
    X(valloc, "valloc", void *, (size_t), 0)                                                       \
    X(pvalloc, "pvalloc", void *, (size_t), 0)                                                     \
    X(mmap, "mmap", void *, (void *, size_t, int, int, int, off_t), 0)                             \
    X(munmap, "munmap", int, (void *, size_t), 0)                                                  \
    X(memcpy, "memcpy", void *, (void *, const void *, size_t), 1)                                 \
    X(memmove, "memmove", void *, (void *, const void *, size_t), 1)                               \
    X(memcpy_chk, "__memcpy_chk", void *, (void *, const void *, size_t, size_t), 1)               \
    X(memmove_chk, "__memmove_chk", void *, (void *, const void *, size_t, size_t), 1)             \
    X(dlopen, "dlopen", void *, (const char *, int), 1)

/* Other names of the same functions, redirected to the same hooks: X(name, symbol, everywhere). */
#define HL_HOOK_ALIASES(X) X(mmap, "mmap64", 0)

#define REAL_POINTER(name, symbol, type, params, everywhere) static type(*real_##name) params;
#define HOOK_PROTOTYPE(name, symbol, type, params, everywhere) static type hook_##name params;
HL_HOOKED_FUNCTIONS(REAL_POINTER)
HL_HOOKED_FUNCTIONS(HOOK_PROTOTYPE)

/* The allocators whose result is a block of `size` bytes, or NULL. The countdown is charged
 * first, so that an allocation that is not sampled is a tail call to the real function. */
#define ALLOCATOR_HOOK(name, params, args)                                                         \
    static __attribute__((noinline)) void *slow_##name params {                                    \
        void *p = real_##name args;                                                                \
        slow_allocation(p, size, HL_ALLOC_NATIVE);                                                 \
        return p;                                                                                  \
    }                                                                                              \
    static void *hook_##name params {                                                              \
        hl_thread_memory *m = &tls;                                                                \
        if (size < mem.sampling_window_bytes && (m->countdown -= (int64_t)size) > 0)               \
            return real_##name args;                                                               \
        return slow_##name args;                                                                   \
    }
ALLOCATOR_HOOK(malloc, (size_t size), (size))
ALLOCATOR_HOOK(aligned_alloc, (size_t alignment, size_t size), (alignment, size))
ALLOCATOR_HOOK(memalign, (size_t alignment, size_t size), (alignment, size))
ALLOCATOR_HOOK(valloc, (size_t size), (size))
ALLOCATOR_HOOK(pvalloc, (size_t size), (size))

/* The copies of `n` bytes. A copy that is not sampled is a tail call to the real function
 * (libpython's copies come here too: docutils makes millions); the slow path, out of line,
 * records the copy and then makes it. */
#define COPY_HOOK(name, params, args)                                                              \
    static __attribute__((noinline)) void *slow_##name params {                                    \
        slow_copy(n);                                                                              \
        return real_##name args;                                                                   \
    }                                                                                              \
    static void *hook_##name params {                                                              \
        if (copy_not_sampled(n)) return real_##name args;                                          \
        return slow_##name args;                                                                   \
    }
COPY_HOOK(memcpy, (void *dst, const void *src, size_t n), (dst, src, n))
COPY_HOOK(memmove, (void *dst, const void *src, size_t n), (dst, src, n))
COPY_HOOK(memcpy_chk, (void *dst, const void *src, size_t n, size_t dst_size),
          (dst, src, n, dst_size))
COPY_HOOK(memmove_chk, (void *dst, const void *src, size_t n, size_t dst_size),
          (dst, src, n, dst_size))

static void *hook_calloc(size_t n, size_t size) {
    void *p = real_calloc(n, size);
    if (p != NULL) on_allocation(p, n * size, HL_ALLOC_NATIVE); /* calloc checked the product */
    return p;
}

static void *hook_realloc(void *old, size_t size) {
    on_free(old); /* before: once realloc returns, the address may be reused by anyone */
    void *p = real_realloc(old, size);
    on_allocation(p, size, HL_ALLOC_NATIVE);
    return p;
}

static void hook_free(void *p) {
    on_free(p);
    real_free(p);
}

static int hook_posix_memalign(void **out, size_t alignment, size_t size) {
    int err = real_posix_memalign(out, alignment, size);
    if (err == 0) on_allocation(*out, size, HL_ALLOC_NATIVE);
    return err;
}

/* Accessible anonymous mappings are memory allocations, counted whole when mapped, touched or
 * not, as malloc'd memory is. Reservations are not: a PROT_NONE mapping (address space set
 * aside, as allocators and JITs do, 64 GiB at a time) or one mapped MAP_NORESERVE (sparse by
 * intent) holds no memory the program asked to use. File mappings are not counted. */
static void *hook_mmap(void *address, size_t length, int prot, int flags, int fd, off_t offset) {
    void *p = real_mmap(address, length, prot, flags, fd, offset);
    if (p != MAP_FAILED && (flags & MAP_ANONYMOUS) && prot != PROT_NONE && !(flags & MAP_NORESERVE))
        on_allocation(p, length, HL_ALLOC_NATIVE);
    return p;
}

static int hook_munmap(void *address, size_t length) {
    on_free(address);
    return real_munmap(address, length);
}

static const hl_got_symbol *symbols(size_t *count);
static const char *hook_allocators_name(void);

/* A library loaded while sampling gets the same redirections as those loaded before. */
static void *hook_dlopen(const char *file, int flags) {
    /* Searched with the caller's own RPATH/RUNPATH, not heatline's (got.h). */
    void *handle = hl_dlopen_as_caller(real_dlopen, file, flags, __builtin_return_address(0));
    if (handle != NULL && sampling() && !tls.inside) {
        size_t n;
        const hl_got_symbol *s = symbols(&n);
        tls.inside++;
        int written = hl_got_patch(s, n, (const void *)&PyMem_Malloc);
        tls.inside--;
        mem.sink->slots_patched(written);
    }
    return handle;
}

/* CPython's _PyMem_GetCurrentAllocatorName: "pymalloc", "malloc", "pymalloc_debug" or
 * "malloc_debug" when the installed allocators are exactly those, else NULL. */
static const char *(*real_allocators_name)(void);

static int resolve_real_functions(void) {
#define REAL_ENTRY(name, symbol, type, params, everywhere) {symbol, (void **)&real_##name},
    static const struct {
        const char *name;
        void **slot;
    } table[] = {HL_HOOKED_FUNCTIONS(REAL_ENTRY)};
#undef REAL_ENTRY
    /* RTLD_DEFAULT, not RTLD_NEXT: a preloaded allocator (or a sanitizer runtime) comes first in
     * the global scope and is what the libraries were calling. */
    for (size_t i = 0; i < sizeof(table) / sizeof(*table); i++) {
        if (*table[i].slot != NULL) continue;
        void *f = dlsym(RTLD_DEFAULT, table[i].name);
        if (f == NULL) return -1;
        *table[i].slot = f;
    }
    /* Not every version need export it: without it, the name is not asked for. */
    if (real_allocators_name == NULL)
        *(void **)&real_allocators_name = dlsym(RTLD_DEFAULT, "_PyMem_GetCurrentAllocatorName");
    return 0;
}

static const hl_got_symbol *symbols(size_t *count) {
#define GOT_ENTRY(name, symbol, type, params, everywhere) {symbol, (void *)hook_##name, everywhere},
#define ALIAS_ENTRY(name, symbol, everywhere) {symbol, (void *)hook_##name, everywhere},
/* Not an allocator: what extension modules see of the allocators (hook_allocators_name). */
#define ALLOCATORS_NAME_ENTRY {"_PyMem_GetCurrentAllocatorName", (void *)hook_allocators_name, 0},
    static const hl_got_symbol table[] = {HL_HOOKED_FUNCTIONS(GOT_ENTRY)
                                              HL_HOOK_ALIASES(ALIAS_ENTRY) ALLOCATORS_NAME_ENTRY};
#undef GOT_ENTRY
#undef ALIAS_ENTRY
#undef ALLOCATORS_NAME_ENTRY
    *count = sizeof(table) / sizeof(*table);
    return table;
}

/* ---- Python allocator hooks ---------------------------------------------------------------- */

/* MEM and OBJ: Python objects and their buffers, nearly all served by pymalloc: the hottest
 * hooks there are (a loop of int arithmetic allocates and frees a few objects per iteration).
 *
 * Allocations: the countdown is charged before the allocator is called, so an allocation that
 * is not sampled is the countdown, the depth below raised and lowered, and a call to the
 * allocator found in place (the hook takes that allocator's ctx, so it passes it on as it
 * came).
 *
 * Frees: the MEM/OBJ free is hooked under every allocator, pymalloc included, and asks the
 * live table's filter (one load) before the allocator's own free. A sampled block is the very
 * block the allocator found in place hands out, at the address it would have had without
 * heatline. That is what keeps the estimate of what a line holds unbiased: CPython keeps some
 * objects alive by their address. Its type attribute cache (4,096 slots, the slot chosen by the
 * attribute name's address, each slot holding a reference to its name until another lookup
 * takes the slot) keeps a name made on the fly (`getattr(self, f"visit_{kind}")`) alive until a
 * name at a colliding address replaces it. pymalloc hands the freed addresses of a churning
 * line out again, so those few slots turn over and hold almost none of its names at the end. A
 * sampled block moved elsewhere (a larger block from the RAW domain, whose free RAW would see
 * without a MEM/OBJ hook) lands in a slot nobody else reaches and stays alive to the end: a
 * window of "held" memory for nearly every sampled name, a steady false leak
 * (tests/targets/memory_visitor.py: 2 MiB held against 24 KiB, at the default window). So no
 * sampled block is moved; the cost is the filter load on every Python free.
 *
 * RAW calls that pymalloc makes from inside a MEM/OBJ hook must not be counted as native: a
 * thread-local depth, raised around every call into the allocator found in place, marks them.
 * Not only a request above 512 bytes reaches RAW: an unsampled request of a few bytes does too,
 * when pymalloc needs a new arena for its pool and grows its table of arenas
 * (PyMem_RawRealloc, 16 x 2^k entries of 48 bytes) or its radix tree of arena addresses
 * (PyMem_RawCalloc), memory it never frees. Without the depth, those would count as native on
 * whichever line happened to need the arena, a window of growth no line asked for
 * (tests/targets/memory_arena_growth.py makes that allocation certain). The depth costs about 5
 * instructions per allocation. A free needs no mark: the MEM/OBJ hook has asked the live table
 * already, and a block pymalloc passes on to RAW's free is the same block. */

enum { DOMAIN_MEM, DOMAIN_OBJ, DOMAIN_RAW };

/* The countdown's fast path for a request of `size` bytes: 1 if it settled it (not sampled). */
static inline __attribute__((always_inline)) int python_not_sampled(hl_thread_memory *m,
                                                                    size_t size) {
    return size - 1 < mem.sampling_window_bytes - 1 && (m->countdown -= (int64_t)size) > 0;
}

static inline uint64_t python_weight(hl_thread_memory *m, size_t size) {
    return weigh(m, &m->countdown, size, size - 1 < mem.sampling_window_bytes - 1);
}

static __attribute__((noinline)) void *python_malloc_slow(int domain, void *ctx, size_t size) {
    hl_thread_memory *m = &tls;
    uint64_t weight = python_weight(m, size);
    m->in_python_allocator++;
    void *p = mem.python_previous[domain].malloc(ctx, size);
    m->in_python_allocator--;
    if (weight != 0 && p != NULL) record_allocation(p, weight, HL_ALLOC_PYTHON);
    return p;
}

static void *python_calloc(int domain, void *ctx, size_t n, size_t elsize) {
    hl_thread_memory *m = &tls;
    size_t size;
    /* An overflowing product fails in the allocator; there is nothing to count. */
    if (__builtin_mul_overflow(n, elsize, &size)) size = 0;
    uint64_t weight = size == 0 || python_not_sampled(m, size) ? 0 : python_weight(m, size);
    m->in_python_allocator++;
    void *p = mem.python_previous[domain].calloc(ctx, n, elsize);
    m->in_python_allocator--;
    if (weight != 0 && p != NULL) record_allocation(p, weight, HL_ALLOC_PYTHON);
    return p;
}

static void *python_realloc(int domain, void *ctx, void *old, size_t size) {
    hl_thread_memory *m = &tls;
    on_free(old); /* before: once realloc returns, the address may be reused by anyone */
    uint64_t weight = python_not_sampled(m, size) ? 0 : python_weight(m, size);
    m->in_python_allocator++;
    void *p = mem.python_previous[domain].realloc(ctx, old, size);
    m->in_python_allocator--;
    if (weight != 0 && p != NULL) record_allocation(p, weight, HL_ALLOC_PYTHON);
    return p;
}

/* The depth is raised around every call (see above): pymalloc may call RAW for a request of
 * 512 bytes or less (a new arena), and so may the debug hooks (their header added to it). */
static void *python_malloc(int domain, void *ctx, size_t size) {
    hl_thread_memory *m = &tls;
    if (!python_not_sampled(m, size)) return python_malloc_slow(domain, ctx, size);
    m->in_python_allocator++;
    void *p = mem.python_previous[domain].malloc(ctx, size);
    m->in_python_allocator--;
    return p;
}

/* A free whose address the filter may list: the whole check (sampling on, the table asked),
 * then the allocator's free. */
static __attribute__((noinline)) void python_free_listed(int domain, void *ctx, void *p) {
    on_free(p);
    mem.python_previous[domain].free(ctx, p);
}

/* Every Python free passes here (see above), so its common case is only the filter's load and
 * a tail call to the allocator's free, with no stack frame: a clear bit proves the block is not
 * listed, whether sampling is on or not (NULL included: its bit is set only by a listed key). */
static inline __attribute__((always_inline)) void python_free(int domain, void *ctx, void *p) {
    if (__builtin_expect(hl_live_may_contain((uintptr_t)p), 0)) {
        python_free_listed(domain, ctx, p);
        return;
    }
    mem.python_previous[domain].free(ctx, p);
}

/* One set of hooks per domain, so that each knows its allocator without a ctx of its own. */
#define PYTHON_DOMAIN_HOOKS(domain, suffix)                                                        \
    static void *python_malloc_##suffix(void *ctx, size_t size) {                                  \
        return python_malloc(domain, ctx, size);                                                   \
    }                                                                                              \
    static void *python_calloc_##suffix(void *ctx, size_t n, size_t elsize) {                      \
        return python_calloc(domain, ctx, n, elsize);                                              \
    }                                                                                              \
    static void *python_realloc_##suffix(void *ctx, void *old, size_t size) {                      \
        return python_realloc(domain, ctx, old, size);                                             \
    }                                                                                              \
    static void python_free_##suffix(void *ctx, void *p) {                                         \
        python_free(domain, ctx, p);                                                               \
    }
PYTHON_DOMAIN_HOOKS(DOMAIN_MEM, mem)
PYTHON_DOMAIN_HOOKS(DOMAIN_OBJ, obj)

/* RAW: C code's own buffers (lzma, bz2 and zlib state, extension modules that use
 * PyMem_RawMalloc): native memory, unless pymalloc is the caller. */
static void *raw_malloc(void *ctx, size_t size) {
    void *p = mem.python_previous[DOMAIN_RAW].malloc(ctx, size);
    if (!tls.in_python_allocator) on_allocation(p, size, HL_ALLOC_NATIVE);
    return p;
}

static void *raw_calloc(void *ctx, size_t n, size_t size) {
    void *p = mem.python_previous[DOMAIN_RAW].calloc(ctx, n, size);
    if (p != NULL && !tls.in_python_allocator) on_allocation(p, n * size, HL_ALLOC_NATIVE);
    return p;
}

static void *raw_realloc(void *ctx, void *old, size_t size) {
    int outer = !tls.in_python_allocator;
    if (outer) on_free(old);
    void *p = mem.python_previous[DOMAIN_RAW].realloc(ctx, old, size);
    if (outer) on_allocation(p, size, HL_ALLOC_NATIVE);
    return p;
}

static void raw_free(void *ctx, void *p) {
    on_free(p);
    mem.python_previous[DOMAIN_RAW].free(ctx, p);
}

static const PyMemAllocatorDomain python_domains[3] = {PYMEM_DOMAIN_MEM, PYMEM_DOMAIN_OBJ,
                                                       PYMEM_DOMAIN_RAW};

/* Our allocator for domain i. It takes the found allocator's ctx (see above). */
static PyMemAllocatorEx python_hooks(int i) {
    const PyMemAllocatorEx *found = &mem.python_previous[i];
    if (i == DOMAIN_RAW)
        return (PyMemAllocatorEx){found->ctx, raw_malloc, raw_calloc, raw_realloc, raw_free};
    if (i == DOMAIN_MEM)
        return (PyMemAllocatorEx){found->ctx, python_malloc_mem, python_calloc_mem,
                                  python_realloc_mem, python_free_mem};
    return (PyMemAllocatorEx){found->ctx, python_malloc_obj, python_calloc_obj, python_realloc_obj,
                              python_free_obj};
}

/* Puts our allocators in, RAW first (pymalloc's calls into it are then seen from the first
 * block the MEM/OBJ hooks ask for). The GIL is held. */
static void install_python_hooks(void) {
    mem.python_allocators_name = real_allocators_name != NULL ? real_allocators_name() : NULL;
    for (int i = 0; i < 3; i++) PyMem_GetAllocator(python_domains[i], &mem.python_previous[i]);
    for (int i = 2; i >= 0; i--) {
        PyMemAllocatorEx hooks = python_hooks(i);
        PyMem_SetAllocator(python_domains[i], &hooks);
    }
}

/* Whether domain i's installed allocator is still ours. */
static int python_hooks_installed(int i) {
    PyMemAllocatorEx current, ours = python_hooks(i);
    PyMem_GetAllocator(python_domains[i], &current);
    return current.ctx == ours.ctx && current.malloc == ours.malloc &&
           current.calloc == ours.calloc && current.realloc == ours.realloc &&
           current.free == ours.free;
}

/* _PyMem_GetCurrentAllocatorName as the program would see it without heatline: it names the
 * allocators it finds installed by comparing them with the ones it knows, and ours, wrapped
 * around them, are none of those. While ours are the installed ones, the name is the one the
 * allocators they wrap had (NULL for tracemalloc's, as under python); once another allocator
 * is installed over ours, or ours are gone, CPython's own answer. Extension modules call it
 * through their GOT (_testcapi and _testinternalcapi's pymem_getallocatorsname, which
 * CPython's own tests and test.pythoninfo ask). The GIL is held. */
static const char *hook_allocators_name(void) {
    if (mem.python_hooked) {
        int ours = 1;
        for (int i = 0; i < 3; i++) ours = ours && python_hooks_installed(i);
        if (ours) return mem.python_allocators_name;
    }
    return real_allocators_name != NULL ? real_allocators_name() : NULL;
}

/* ---- installing and removing ------------------------------------------------------------------ */

int hl_memhooks_resolve(void) {
    return resolve_real_functions() == 0 ? 0 : -ENOSYS;
}

int hl_memhooks_install(uint64_t sampling_window_bytes, const hl_memhooks_sink *sink) {
    mem.sampling_window_bytes = sampling_window_bytes;
    mem.sink = sink;
    /* The hooks wrap whatever allocator is installed (pymalloc, the debug hooks, tracemalloc). */
    if (!mem.python_hooked) {
        install_python_hooks();
        mem.python_hooked = 1;
    }
    __atomic_store_n(&mem.active, 1, __ATOMIC_RELEASE);
    size_t n;
    const hl_got_symbol *s = symbols(&n);
    tls.inside++;
    int written = hl_got_patch(s, n, (const void *)&PyMem_Malloc);
    tls.inside--;
    return written;
}

void hl_memhooks_remove(void) {
    if (!__atomic_exchange_n(&mem.active, 0, __ATOMIC_ACQ_REL)) return;
    hl_memhooks_put_back();
}

void hl_memhooks_put_back(void) {
    hl_got_restore();
    /* Put the previous allocators back only if ours are still the installed ones: a hook
     * installed after ours (tracemalloc started later) still calls ours, which now only passes
     * calls through. */
    if (mem.python_hooked) {
        int ours = 1;
        for (int i = 0; i < 3; i++) ours = ours && python_hooks_installed(i);
        if (ours) {
            for (int i = 0; i < 3; i++)
                PyMem_SetAllocator(python_domains[i], &mem.python_previous[i]);
            mem.python_hooked = 0;
        }
    }
}

int hl_memhooks_sampling(void) {
    return __atomic_load_n(&mem.active, __ATOMIC_RELAXED);
}

void hl_memhooks_off(void) {
    __atomic_store_n(&mem.active, 0, __ATOMIC_RELAXED);
}

void hl_memhooks_enter(void) {
    tls.inside++;
}
void hl_memhooks_leave(void) {
    HL_ASSERT(tls.inside > 0); /* enter and leave pair up: hl_engine_lock and _unlock */
    tls.inside--;
}
