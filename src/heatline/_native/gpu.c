/* gpu.c: the GPU part's glue: loading NVML and CUPTI, the session's GPU mode, the warnings, and
 * the part's lifecycle, which drives nvml.c (device sampling) and cupti.c (kernel tracing). See
 * gpu.h.
 *
 * Failure is never the program's problem: a library that does not load, a function that fails,
 * or another profiler holding CUPTI leaves a warning string in the results and GPU profiling
 * (or its CUPTI part) off.
 */
#define _GNU_SOURCE
#include "gpu.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "engine_part.h"

static struct {
    void *nvml_lib, *cupti_lib; /* loaded once, kept for later sessions */
    uint64_t start_ns;
    hl_gpu_results r;
} gpu;

const hl_gpu_results *hl_gpu_results_get_locked(void) {
    HL_ASSERT_ENGINE_LOCKED();
    gpu.r.sampling = hl_nvml_results_get_locked();
    gpu.r.tracing = hl_cupti_results_get_locked();
    return &gpu.r;
}

static void warn(const char *format, const char *detail) {
    if (gpu.r.nwarnings >= HL_GPU_MAX_WARNINGS) return;
    snprintf(gpu.r.warnings[gpu.r.nwarnings++], sizeof(gpu.r.warnings[0]), format, detail);
}

/* *cached, or else the library named by the environment variable, or by default (NULL when it
 * does not load: dlerror() says why). */
static void *library(void **cached, const char *variable, const char *fallback) {
    if (*cached == NULL) {
        const char *path = getenv(variable);
        *cached = dlopen(path != NULL && *path != '\0' ? path : fallback, RTLD_NOW | RTLD_LOCAL);
    }
    return *cached;
}

/* Forgets all results (engine lock held). */
static void gpu_reset_locked(void) {
    HL_ASSERT_ENGINE_LOCKED();
    hl_nvml_reset_locked();
    hl_cupti_reset_locked();
    memset(&gpu.r, 0, sizeof(gpu.r));
}

/* Kernel tracing, once device sampling is on: 0, or -1 with a warning. */
static int start_tracing(void) {
    void *lib = library(&gpu.cupti_lib, "HEATLINE_CUPTI_LIBRARY", "libcupti.so");
    if (lib == NULL) {
        const char *why = dlerror();
        warn("GPU kernel tracing is off: CUPTI could not be loaded (%s); per-line GPU time is not "
             "measured (install it, e.g. pip install nvidia-cuda-cupti-cu12, or point "
             "HEATLINE_CUPTI_LIBRARY at libcupti.so)",
             why ? why : "unknown error");
        return -1;
    }
    char why[sizeof(gpu.r.warnings[0])];
    if (hl_cupti_start(lib, gpu.start_ns, why, sizeof(why)) == 0) return 0;
    warn("%s", why);
    return -1;
}

static void gpu_start(const hl_config *config) {
    int mode = config->gpu_mode;
    hl_engine_lock();
    gpu_reset_locked();
    gpu.start_ns = hl_now_ns();
    hl_engine_unlock();
    if (mode == HL_GPU_OFF) return;

    void *lib = library(&gpu.nvml_lib, "HEATLINE_NVML_LIBRARY", "libnvidia-ml.so.1");
    int nvml = lib == NULL ? -1 : hl_nvml_open(lib);
    if (nvml != 0) {
        if (mode == HL_GPU_AUTO) return; /* no NVIDIA GPU here: nothing changes */
        const char *why = nvml == -1 ? dlerror() : "libnvidia-ml";
        warn(nvml == -1   ? "GPU profiling is off: NVML could not be loaded (%s)"
             : nvml == -4 ? "GPU profiling is off: NVML reports no usable GPU (%s)"
                          : "GPU profiling is off: NVML could not be initialised (%s)",
             why ? why : "unknown error");
        return;
    }
    int cupti = start_tracing();
    hl_engine_lock();
    gpu.r.nvml = 1;
    gpu.r.cupti = cupti == 0;
    hl_nvml_start_locked(gpu.start_ns);
    hl_engine_unlock();
    int err = hl_nvml_poller_start();
    if (err != 0) {
        hl_engine_lock();
        warn("GPU device sampling stopped: its thread could not be started (%s)", strerror(err));
        hl_engine_unlock();
    }
}

static void gpu_stop(void) {
    hl_cupti_stop();       /* the lock not held: CUPTI's buffer callbacks take it */
    hl_nvml_poller_stop(); /* nor here: the poller takes it */
    hl_engine_lock();
    hl_cupti_release_locked();
    hl_nvml_stop_locked();
    hl_engine_unlock();
}

static void gpu_after_fork_child(void) {
    /* CUPTI and NVML state does not survive fork(); the child records nothing. */
    hl_cupti_after_fork_child();
    hl_nvml_after_fork_child();
}

const hl_engine_part hl_gpu_part = {
    .start_released = gpu_start,
    .stop_released = gpu_stop,
    .after_fork_child = gpu_after_fork_child,
    .suspend_for_fork = hl_nvml_suspend_for_fork,
    .resume_after_fork = hl_nvml_resume_after_fork,
};
