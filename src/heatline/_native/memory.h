/* memory.h: the memory engine: allocation and copy sampling by bytes.
 *
 * Python allocations are seen through CPython's allocator hooks (PyMem_SetAllocator on the
 * MEM and OBJ domains); native ones (malloc family, anonymous mmap/munmap) and copies
 * (memcpy/memmove) through GOT redirection of every other loaded library (got.h). See the
 * comment at the top of memory.c for the sampling maths and docs/design.md for the reasons.
 *
 * Results are charged into the engine's tables (stats.h) under the engine lock; the hooks'
 * fast paths take no lock.
 */
#ifndef HEATLINE_MEMORY_H
#define HEATLINE_MEMORY_H

#include <stdint.h>

#include "stats.h"

/* Timeline sizes, in buckets (see hl_timeline in stats.h). */
#define HL_PROGRAM_TIMELINE_BUCKETS 256
#define HL_LINE_TIMELINE_BUCKETS 32

/* No line: an allocation made while no user frame was on the stack. */
#define HL_NO_LINE UINT32_MAX

typedef struct hl_memory_totals {
    int enabled;
    uint64_t window;                 /* mean bytes between samples */
    uint64_t alloc[HL_NALLOC_KINDS]; /* all allocations, attributed to a line or not */
    uint64_t freed;
    int64_t live, peak;
    uint64_t peak_t_ns;
    uint32_t peak_line;              /* line id, or HL_NO_LINE */
    uint64_t copied;
    uint64_t unattributed_alloc, unattributed_copied; /* no user frame on the stack */
    uint64_t samples;                /* sampled allocation events */
    uint64_t untracked;              /* sampled allocations whose free cannot be seen */
    uint64_t slots_patched;          /* GOT slots redirected (native allocations and copies) */
    hl_timeline timeline;            /* of `live` */
} hl_memory_totals;

/* Starts allocation and copy sampling with the given mean window (bytes). Called by
 * hl_engine_start with the GIL held and the engine lock NOT held. Returns 0 or -errno. */
int hl_memory_start(uint64_t window);

/* Stops sampling: puts back the allocators and the GOT slots. Called with the GIL held. The
 * tables stay readable. Idempotent. */
void hl_memory_stop(void);

/* Forgets all results (called by the engine's reset, under the engine lock). */
void hl_memory_reset(void);

/* The program-wide figures (read under the engine lock). */
const hl_memory_totals *hl_memory_totals_get(void);

/* Whether the thread is waiting for the engine lock inside a memory hook (it is then not
 * blocked in the program's sense: see lock_from_hook in memory.c). Lock-free. */
int hl_memory_thread_waiting(long native_id);

/* The line id of the calling thread's innermost user frame, found as the allocation hooks find
 * it (HL_NO_LINE if none); used by gpu.c for launches. Engine lock held. */
uint32_t hl_memory_current_line(void);

/* In the child after fork(): sampling is off there. */
void hl_memory_after_fork_child(void);

/* Marks the calling thread as working inside the engine: its own allocations are not
 * sampled (the engine lock may be held, and the hooks would take it again). Nests. */
void hl_memory_enter_engine(void);
void hl_memory_leave_engine(void);

#endif
