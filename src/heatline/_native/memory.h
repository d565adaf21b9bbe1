/* memory.h: the memory part of the engine: allocation and copy sampling by bytes.
 *
 * Python allocations are seen through CPython's allocator hooks (PyMem_SetAllocator on the
 * MEM and OBJ domains); native ones (malloc family, anonymous mmap/munmap) and copies
 * (memcpy/memmove) through GOT redirection of every other loaded library (got.h). See the
 * comment at the top of memhooks.c for the sampling maths and docs/design-memory.md for the reasons.
 *
 * Results are charged into the engine's tables (stats.h) under the engine lock (engine_part.h); the
 * hooks' fast paths take no lock.
 */
#ifndef HEATLINE_MEMORY_H
#define HEATLINE_MEMORY_H

#include <stdint.h>

#include "stats.h"

/* Timeline sizes, in buckets (see hl_timeline in stats.h). */
#define HL_PROGRAM_TIMELINE_BUCKETS 256
#define HL_LINE_TIMELINE_BUCKETS 32

typedef struct hl_memory_totals {
    int enabled;
    uint64_t sampling_window_bytes;  /* mean bytes between samples */
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
    uint64_t origin_ns; /* CLOCK_MONOTONIC when the part started: every t_ns above counts from
                         * it (the shell puts children's timelines on the main's clock) */
} hl_memory_totals;

/* The part's lifecycle (engine_part.h) is hl_memory_part: start (with the GIL: the allocator hooks
 * and GOT redirections go in when config->memory_sampling_window_bytes is not 0), stop (with the GIL: they
 * come out; the tables stay readable), reset, after_fork_child (sampling is off in the child),
 * enter/leave (a thread inside the engine: its own allocations are not sampled). */

/* The program-wide figures (read under the engine lock). */
const hl_memory_totals *hl_memory_totals_get_locked(void);

#endif
