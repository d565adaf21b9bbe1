/* memhooks.h: the memory part's hooks: where the program's allocations, frees and copies are
 * seen (CPython's allocator hooks on the MEM, OBJ and RAW domains; GOT redirection of every
 * other loaded library's malloc family, anonymous mmap/munmap, memcpy/memmove and dlopen, got.h)
 * and sampled by bytes (the maths at the top of memhooks.c). What a sampled event is charged to
 * is the sink's business (memory.c). The hooks' fast paths take no lock.
 */
#ifndef HEATLINE_MEMHOOKS_H
#define HEATLINE_MEMHOOKS_H

#include <stdint.h>

/* Where sampled events go. Called from a hook's slow path, in the program's thread, marked as
 * inside the engine (its own allocations are not sampled). */
typedef struct hl_memhooks_sink {
    void (*allocation)(uintptr_t address, uint64_t weight, int kind); /* enum hl_alloc_kind */
    void (*free)(uintptr_t address); /* a block listed in the live table is being freed */
    void (*copy)(uint64_t weight);
    void (*slots_patched)(int written); /* GOT slots redirected in a library dlopen'ed later */
} hl_memhooks_sink;

/* Finds the real functions the native hooks call. 0, or -ENOSYS if one is missing. */
int hl_memhooks_resolve(void);

/* Puts the hooks in (GIL held, after hl_memhooks_resolve) with the given mean window (bytes)
 * and sink. Returns the number of GOT slots redirected. */
int hl_memhooks_install(uint64_t sampling_window_bytes, const hl_memhooks_sink *sink);

/* Takes them out (GIL held): the GOT slots and, if ours are still the installed ones, the
 * Python allocators. Idempotent. */
void hl_memhooks_remove(void);

/* What hl_memhooks_remove does once sampling is off (GIL held): in a fork child that profiles
 * nothing, where hl_memhooks_off already turned sampling off but every allocation still passes
 * through the (idle) hooks. Idempotent. */
void hl_memhooks_put_back(void);

/* Whether the hooks sample (relaxed; the sink checks it under the engine lock). */
int hl_memhooks_sampling(void);

/* In the child after fork(): sampling is off there. */
void hl_memhooks_off(void);

/* Marks the calling thread as inside the engine: its allocations pass through unsampled. Nests. */
void hl_memhooks_enter(void);
void hl_memhooks_leave(void);

#endif
