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
 * Frees: every free asks the live table (livetable.h) without a lock; only a listed block goes
 * on to be charged.
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
    int active; /* read by every hook: relaxed atomic */
    uint64_t window;
    const hl_memhooks_sink *sink;
    int python_hooked;
    PyMemAllocatorEx python_previous[3]; /* MEM, OBJ, RAW */
} mem;
/* A distance drawn uniformly from [W/2, 3W/2). */
static int64_t next_distance(hl_thread_memory *m) {
    uint64_t w = mem.window;
    return (int64_t)(w / 2 + hl_next_random(&m->rng) % (w ? w : 1)) + 1;
}

static void thread_init(hl_thread_memory *m) {
    m->rng = hl_now_ns() ^ ((uint64_t)gettid() << 32) ^ (uintptr_t)m ^ 0x9E3779B97F4A7C15ULL;
    if (m->rng == 0) m->rng = 1;
    /* Start as if the process had been running: a uniform position within a spacing. */
    m->countdown = (int64_t)(hl_next_random(&m->rng) % (mem.window ? mem.window : 1)) + 1;
    m->copy_countdown = (int64_t)(hl_next_random(&m->rng) % (mem.window ? mem.window : 1)) + 1;
    m->ready = 1;
}

/* The weight of an event of `size` bytes that exhausted *countdown (already decremented), or of
 * a large one. Rewinds the countdown. */
static uint64_t weight_of(hl_thread_memory *m, int64_t *countdown, size_t size) {
    if (size >= mem.window) return size;
    uint64_t points = 0;
    while (*countdown <= 0) {
        points++;
        *countdown += next_distance(m);
    }
    return points * mem.window;
}

/* ---- the hooks' fast paths ---------------------------------------------------------------- */

static inline int sampling(void) {
    return __atomic_load_n(&mem.active, __ATOMIC_RELAXED);
}

/* The slow path shared by allocations and copies, once `countdown` has run out (or the
 * thread is new, or the event is large): the weight to record, 0 for none. */
static uint64_t slow_weight(hl_thread_memory *m, int64_t *countdown, size_t size) {
    if (m->inside) return 0;
    if (!m->ready) {
        thread_init(m);
        if (size < mem.window && (*countdown -= (int64_t)size) > 0) return 0;
    }
    return weight_of(m, countdown, size);
}

/* The slow paths are out of line, and the fast paths below forced inline into each hook: left
 * to itself, gcc split on_allocation and called its countdown part on every allocation. */
static __attribute__((noinline)) void slow_allocation(void *p, size_t size, int kind) {
    uint64_t weight = slow_weight(&tls, &tls.countdown, size);
    if (weight == 0) return;
    tls.inside++;
    mem.sink->allocation((uintptr_t)p, weight, kind);
    tls.inside--;
}

static inline __attribute__((always_inline)) void on_allocation(void *p, size_t size, int kind) {
    if (p == NULL || !sampling()) return;
    hl_thread_memory *m = &tls;
    if (size < mem.window && (m->countdown -= (int64_t)size) > 0) return;
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
    uint64_t weight = slow_weight(&tls, &tls.copy_countdown, size);
    if (weight == 0) return;
    tls.inside++;
    mem.sink->copy(weight);
    tls.inside--;
}

static inline __attribute__((always_inline)) void on_copy(size_t size) {
    if (!sampling()) return;
    hl_thread_memory *m = &tls;
    if (size < mem.window && (m->copy_countdown -= (int64_t)size) > 0) return;
    slow_copy(size);
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

/* The allocators whose result is a block of `size` bytes, or NULL. */
#define ALLOCATOR_HOOK(name, params, args)                                                         \
    static void *hook_##name params {                                                              \
        void *p = real_##name args;                                                                \
        on_allocation(p, size, HL_ALLOC_NATIVE);                                                   \
        return p;                                                                                  \
    }
ALLOCATOR_HOOK(malloc, (size_t size), (size))
ALLOCATOR_HOOK(aligned_alloc, (size_t alignment, size_t size), (alignment, size))
ALLOCATOR_HOOK(memalign, (size_t alignment, size_t size), (alignment, size))
ALLOCATOR_HOOK(valloc, (size_t size), (size))
ALLOCATOR_HOOK(pvalloc, (size_t size), (size))

/* The copies of `n` bytes. */
#define COPY_HOOK(name, params, args)                                                              \
    static void *hook_##name params {                                                              \
        on_copy(n);                                                                                \
        return real_##name args;                                                                   \
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
    return 0;
}

static const hl_got_symbol *symbols(size_t *count) {
#define GOT_ENTRY(name, symbol, type, params, everywhere) {symbol, (void *)hook_##name, everywhere},
#define ALIAS_ENTRY(name, symbol, everywhere) {symbol, (void *)hook_##name, everywhere},
    static const hl_got_symbol table[] = {HL_HOOKED_FUNCTIONS(GOT_ENTRY)
                                              HL_HOOK_ALIASES(ALIAS_ENTRY)};
#undef GOT_ENTRY
#undef ALIAS_ENTRY
    *count = sizeof(table) / sizeof(*table);
    return table;
}

/* ---- Python allocator hooks ---------------------------------------------------------------- */

/* MEM and OBJ: Python objects and their buffers. pymalloc serves requests above 512 bytes (its
 * SMALL_REQUEST_THRESHOLD since 3.8; and requests it cannot serve, which only happens when out
 * of memory) through the RAW domain, so the RAW hooks below must know when pymalloc is the
 * caller: a thread-local depth, raised only around the calls that can reach RAW, which keeps
 * the common small allocation free of it. A free needs no mark: the block has already left the
 * live table when the RAW hook sees its address. */
#define PYMALLOC_LARGEST 512

static void *python_malloc(void *ctx, size_t size) {
    PyMemAllocatorEx *previous = ctx;
    void *p;
    if (size <= PYMALLOC_LARGEST && size != 0) {
        p = previous->malloc(previous->ctx, size);
    } else {
        tls.in_python_allocator++;
        p = previous->malloc(previous->ctx, size);
        tls.in_python_allocator--;
    }
    on_allocation(p, size, HL_ALLOC_PYTHON);
    return p;
}

static void *python_calloc(void *ctx, size_t n, size_t size) {
    PyMemAllocatorEx *previous = ctx;
    tls.in_python_allocator++;
    void *p = previous->calloc(previous->ctx, n, size);
    tls.in_python_allocator--;
    if (p != NULL) on_allocation(p, n * size, HL_ALLOC_PYTHON);
    return p;
}

static void *python_realloc(void *ctx, void *old, size_t size) {
    PyMemAllocatorEx *previous = ctx;
    on_free(old);
    tls.in_python_allocator++;
    void *p = previous->realloc(previous->ctx, old, size);
    tls.in_python_allocator--;
    on_allocation(p, size, HL_ALLOC_PYTHON);
    return p;
}

static void python_free(void *ctx, void *p) {
    PyMemAllocatorEx *previous = ctx;
    on_free(p);
    previous->free(previous->ctx, p);
}

/* RAW: C code's own buffers (lzma, bz2 and zlib state, extension modules that use
 * PyMem_RawMalloc): native memory, unless pymalloc is the caller. */
static void *raw_malloc(void *ctx, size_t size) {
    PyMemAllocatorEx *previous = ctx;
    void *p = previous->malloc(previous->ctx, size);
    if (!tls.in_python_allocator) on_allocation(p, size, HL_ALLOC_NATIVE);
    return p;
}

static void *raw_calloc(void *ctx, size_t n, size_t size) {
    PyMemAllocatorEx *previous = ctx;
    void *p = previous->calloc(previous->ctx, n, size);
    if (p != NULL && !tls.in_python_allocator) on_allocation(p, n * size, HL_ALLOC_NATIVE);
    return p;
}

static void *raw_realloc(void *ctx, void *old, size_t size) {
    PyMemAllocatorEx *previous = ctx;
    int outer = !tls.in_python_allocator;
    if (outer) on_free(old);
    void *p = previous->realloc(previous->ctx, old, size);
    if (outer) on_allocation(p, size, HL_ALLOC_NATIVE);
    return p;
}

static void raw_free(void *ctx, void *p) {
    PyMemAllocatorEx *previous = ctx;
    on_free(p);
    previous->free(previous->ctx, p);
}

static const PyMemAllocatorDomain python_domains[3] = {PYMEM_DOMAIN_MEM, PYMEM_DOMAIN_OBJ,
                                                       PYMEM_DOMAIN_RAW};

/* ---- lifecycle ----------------------------------------------------------------------------- */

/* ---- installing and removing ------------------------------------------------------------------ */

int hl_memhooks_resolve(void) {
    return resolve_real_functions() == 0 ? 0 : -ENOSYS;
}

int hl_memhooks_install(uint64_t window, const hl_memhooks_sink *sink) {
    mem.window = window;
    mem.sink = sink;
    /* The hooks wrap whatever allocator is installed (pymalloc, the debug hooks, tracemalloc). */
    if (!mem.python_hooked) {
        for (int i = 0; i < 3; i++) {
            PyMem_GetAllocator(python_domains[i], &mem.python_previous[i]);
            PyMemAllocatorEx python = {&mem.python_previous[i], python_malloc, python_calloc,
                                       python_realloc, python_free};
            PyMemAllocatorEx raw = {&mem.python_previous[i], raw_malloc, raw_calloc, raw_realloc,
                                    raw_free};
            PyMem_SetAllocator(python_domains[i],
                               python_domains[i] == PYMEM_DOMAIN_RAW ? &raw : &python);
        }
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
        for (int i = 0; i < 3; i++) {
            PyMemAllocatorEx current;
            PyMem_GetAllocator(python_domains[i], &current);
            ours = ours && (current.malloc == python_malloc || current.malloc == raw_malloc) &&
                   current.ctx == &mem.python_previous[i];
        }
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
