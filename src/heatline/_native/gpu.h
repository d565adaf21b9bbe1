/* gpu.h: the GPU part of the engine, NVIDIA GPUs: the glue that starts, stops and reports its
 * two libraries together: device utilisation and memory over time (nvml.h, sampled by the
 * sampler thread) and each kernel's, copy's and memset's device time charged to the Python line
 * that launched it (cupti.h). See docs/design-gpu.md.
 *
 * Both libraries are loaded here with dlopen when a session starts (libnvidia-ml.so.1 and
 * libcupti.so, or the paths in HEATLINE_NVML_LIBRARY / HEATLINE_CUPTI_LIBRARY), so nothing
 * CUDA is needed to build or to run without a GPU. A library that is missing, fails, or (CUPTI)
 * is already used by another profiler leaves a warning in the results, never an error. Kernel
 * tracing is tried only where device sampling is on.
 *
 * Results are read and written under the engine lock (engine_part.h).
 */
#ifndef HEATLINE_GPU_H
#define HEATLINE_GPU_H

#include "cupti.h"
#include "nvml.h"

enum hl_gpu_mode { HL_GPU_OFF = 0, HL_GPU_ON = 1, HL_GPU_AUTO = 2 };

#define HL_GPU_MAX_WARNINGS 4

typedef struct hl_gpu_results {
    int nvml;  /* device sampling was on */
    int cupti; /* kernel tracing was on */
    char warnings[HL_GPU_MAX_WARNINGS][512];
    int nwarnings;
    const hl_nvml_results *sampling; /* device sampling's results */
    const hl_cupti_results *tracing; /* kernel tracing's results */
} hl_gpu_results;

/* The part's lifecycle (engine_part.h) is hl_gpu_part: start_released (the session's mode, enum
 * hl_gpu_mode: HL_GPU_AUTO turns it on only when NVML loads and reports a device, HL_GPU_ON
 * also records why not in the warnings; the results are reset in every mode),
 * stop_released (flushes CUPTI's buffers into the results, then stops tracing; idempotent),
 * tick (samples NVML every 100 ms), after_fork_child (every callback becomes a no-op). */

/* The results (engine lock held). */
const hl_gpu_results *hl_gpu_results_get_locked(void);

#endif
