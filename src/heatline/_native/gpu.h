/* gpu.h: NVIDIA GPU profiling: device utilisation and memory over time (NVML, sampled by the
 * sampler thread) and each kernel's, copy's and memset's device time charged to the Python line
 * that launched it (CUPTI: driver-API callbacks for the launching line, activity records for
 * the durations, matched by correlation id). See the comment at the top of gpu.c and the GPU
 * section of docs/design.md.
 *
 * Both libraries are loaded with dlopen when a session starts (libnvidia-ml.so.1 and
 * libcupti.so, or the paths in HEATLINE_NVML_LIBRARY / HEATLINE_CUPTI_LIBRARY), so nothing
 * CUDA is needed to build or to run without a GPU. A library that is missing, fails, or (CUPTI)
 * is already used by another profiler leaves a warning in the results, never an error.
 *
 * Results are read and written under the engine lock (engine.h).
 */
#ifndef HEATLINE_GPU_H
#define HEATLINE_GPU_H

#include <stdint.h>

#include "stats.h"

enum hl_gpu_mode { HL_GPU_OFF = 0, HL_GPU_ON = 1, HL_GPU_AUTO = 2 };

#define HL_GPU_MAX_DEVICES 16
#define HL_GPU_MAX_WARNINGS 4
#define HL_GPU_KERNEL_LINES 8 /* launching lines kept per kernel; the rest are summed */
#define HL_GPU_TIMELINE_BUCKETS 256

/* Per line (indexed by the line's id in hl_stats). */
typedef struct hl_gpu_line {
    uint64_t gpu_ns;   /* device time of the kernels, copies and memsets it launched */
    uint64_t launches; /* kernels, copies and memsets it launched */
    uint64_t copy_h2d, copy_d2h, copy_other; /* bytes copied, by direction */
    uint64_t alloc;    /* device memory it allocated (cuMemAlloc family) */
} hl_gpu_line;

typedef struct hl_gpu_kernel_line {
    uint32_t line; /* line id, or HL_NO_LINE */
    uint64_t calls, ns;
} hl_gpu_kernel_line;

typedef struct hl_gpu_kernel {
    char *name;      /* owned: as CUPTI reports it (mangled) */
    char *demangled; /* owned, or NULL when it could not be demangled */
    uint64_t calls, ns;
    uint32_t nlines;
    hl_gpu_kernel_line lines[HL_GPU_KERNEL_LINES];
    uint64_t other_lines_calls, other_lines_ns; /* launches from lines past the first few */
} hl_gpu_kernel;

typedef struct hl_gpu_device {
    unsigned index;
    char name[96];
    uint64_t memory_total;
    uint64_t samples, util_sum, idle_samples; /* utilisation samples, their sum, those at 0 */
    uint64_t used_peak;
    uint64_t used_peak_t_ns;
    hl_timeline util, used; /* utilisation (%) and memory used (bytes) over time */
} hl_gpu_device;

typedef struct hl_gpu_results {
    int nvml;  /* device sampling was on */
    int cupti; /* kernel tracing was on */
    char warnings[HL_GPU_MAX_WARNINGS][512];
    int nwarnings;
    hl_gpu_device devices[HL_GPU_MAX_DEVICES];
    unsigned ndevices;
    hl_gpu_line *lines; /* indexed by line id; nlines entries */
    size_t nlines;
    hl_gpu_kernel *kernels;
    size_t nkernels;
    uint64_t records;      /* activity records read */
    uint64_t unmatched_ns; /* device time whose launch was not seen (or no user line) */
    uint64_t unmatched_records;
    uint64_t dropped_records; /* records CUPTI reported dropped */
    int64_t alloc_live, alloc_peak; /* device memory allocated through the driver, bytes */
    uint64_t alloc_peak_t_ns;
    uint32_t alloc_peak_line; /* line id allocating when the peak was reached, or HL_NO_LINE */
} hl_gpu_results;

/* The part's lifecycle (engine.h) is hl_gpu_part: start_released (the session's mode, enum
 * hl_gpu_mode: HL_GPU_AUTO turns it on only when NVML loads and reports a device, HL_GPU_ON
 * also records why not in the warnings; the results are reset in every mode),
 * stop_released (flushes CUPTI's buffers into the results, then stops tracing; idempotent),
 * tick (samples NVML every 100 ms), after_fork_child (every callback becomes a no-op). */

/* The results (engine lock held). */
const hl_gpu_results *hl_gpu_results_get(void);

#endif
