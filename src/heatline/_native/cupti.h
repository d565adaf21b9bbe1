/* cupti.h: GPU kernel tracing through CUPTI: each kernel's, copy's and memset's device time,
 * and each device allocation, charged to the Python line that launched it. One of the GPU
 * part's two libraries (gpu.h starts, stops and reports them together; device sampling is
 * nvml.h's).
 *
 * Driver-API callbacks give the launching line, activity records the durations; the two are
 * matched by CUPTI's correlation id (the comment at the top of cupti.c). The library is bound
 * from a handle the GPU part loaded (gpu.c), so nothing of CUDA is needed to build or to run
 * without a GPU. CUPTI's callbacks run in the program's threads and in CUPTI's own; they take
 * the engine lock (engine_part.h), under which the results are read and written.
 */
#ifndef HEATLINE_CUPTI_H
#define HEATLINE_CUPTI_H

#include <stddef.h>
#include <stdint.h>

#include "stats.h"

#define HL_CUPTI_KERNEL_LINES 8 /* launching lines kept per kernel; the rest are summed */

/* Per line (indexed by the line's id in hl_stats). */
typedef struct hl_cupti_line {
    uint64_t gpu_ns;   /* device time of the kernels, copies and memsets it launched */
    uint64_t launches; /* kernels, copies and memsets it launched */
    uint64_t copy_h2d, copy_d2h, copy_other; /* bytes copied, by direction */
    uint64_t alloc;    /* device memory it allocated (cuMemAlloc family) */
} hl_cupti_line;

typedef struct hl_cupti_kernel_line {
    uint32_t line; /* line id, or HL_NO_LINE */
    uint64_t calls, ns;
} hl_cupti_kernel_line;

typedef struct hl_cupti_kernel {
    char *name;      /* owned: as CUPTI reports it (mangled) */
    char *demangled; /* owned, or NULL when it could not be demangled */
    uint64_t calls, ns;
    uint32_t nlines;
    hl_cupti_kernel_line lines[HL_CUPTI_KERNEL_LINES];
    uint64_t other_lines_calls, other_lines_ns; /* launches from lines past the first few */
} hl_cupti_kernel;

typedef struct hl_cupti_results {
    hl_cupti_line *lines; /* indexed by line id; nlines entries */
    size_t nlines;
    hl_cupti_kernel *kernels;
    size_t nkernels;
    uint64_t records;      /* activity records read */
    uint64_t unmatched_ns; /* device time whose launch was not seen (or no user line) */
    uint64_t unmatched_records;
    uint64_t dropped_records; /* records CUPTI reported dropped */
    int64_t alloc_live, alloc_peak; /* device memory allocated through the driver, bytes */
    uint64_t alloc_peak_t_ns;
    uint32_t alloc_peak_line; /* line id allocating when the peak was reached, or HL_NO_LINE */
} hl_cupti_results;

/* Binds CUPTI's functions from lib (a dlopen handle), subscribes to the driver API's callbacks
 * and enables the activity records; start_ns (the session's start) is the origin of the
 * allocation peak's time. Engine lock not held. Returns 0, or -1 with the warning to report in
 * why (size bytes): lib lacks a function, another profiler holds CUPTI, or a call failed. */
int hl_cupti_start(void *lib, uint64_t start_ns, char *why, size_t size);

/* Flushes CUPTI's buffers into the results, then stops tracing. Engine lock NOT held: the
 * buffers' callback takes it. Idempotent. */
void hl_cupti_stop(void);

/* Then, engine lock held: the callbacks record nothing more and the correlation ring is freed.
 * The results stay readable. */
void hl_cupti_release_locked(void);

/* Forgets the results (engine lock held). */
void hl_cupti_reset_locked(void);

/* In the child of fork(): CUPTI's state does not survive it; every callback becomes a no-op. */
void hl_cupti_after_fork_child(void);

/* The results (engine lock held). */
const hl_cupti_results *hl_cupti_results_get_locked(void);

#endif
