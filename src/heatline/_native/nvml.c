/* nvml.c: GPU device sampling through NVML. See nvml.h.
 *
 * The sampler thread calls hl_nvml_tick_locked at every tick (through the GPU part); every
 * 100 ms it reads each device's utilisation and memory in use into per-device timelines and
 * counters (mean utilisation, the share of samples at 0%, peak memory).
 */
#define _GNU_SOURCE
#include "nvml.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "engine_part.h" /* the lock its results are read and written under */
#include "gpu_abi.h"

#define SAMPLE_PERIOD_NS 100000000u /* every 100 ms */

static struct {
    hl_nvmlShutdown_fn nvmlShutdown;
    hl_nvmlDeviceGetUtilizationRates_fn nvmlDeviceGetUtilizationRates;
    hl_nvmlDeviceGetMemoryInfo_fn nvmlDeviceGetMemoryInfo;
    hl_nvmlDevice_t handles[HL_NVML_MAX_DEVICES];
    int on; /* sampling (the GPU part's results keep saying it was on after stop) */
    uint64_t start_ns, next_sample_ns;
    hl_nvml_results r;
} nvml;

const hl_nvml_results *hl_nvml_results_get_locked(void) {
    HL_ASSERT_ENGINE_LOCKED();
    return &nvml.r;
}

int hl_nvml_open(void *lib) {
    hl_nvmlInit_v2_fn init = HL_GPU_RESOLVE(lib, hl_nvmlInit_v2_fn, nvmlInit_v2);
    hl_nvmlDeviceGetCount_v2_fn count =
        HL_GPU_RESOLVE(lib, hl_nvmlDeviceGetCount_v2_fn, nvmlDeviceGetCount_v2);
    hl_nvmlDeviceGetHandleByIndex_v2_fn handle =
        HL_GPU_RESOLVE(lib, hl_nvmlDeviceGetHandleByIndex_v2_fn, nvmlDeviceGetHandleByIndex_v2);
    hl_nvmlDeviceGetName_fn get_name =
        HL_GPU_RESOLVE(lib, hl_nvmlDeviceGetName_fn, nvmlDeviceGetName);
    nvml.nvmlShutdown = HL_GPU_RESOLVE(lib, hl_nvmlShutdown_fn, nvmlShutdown);
    nvml.nvmlDeviceGetUtilizationRates =
        HL_GPU_RESOLVE(lib, hl_nvmlDeviceGetUtilizationRates_fn, nvmlDeviceGetUtilizationRates);
    nvml.nvmlDeviceGetMemoryInfo =
        HL_GPU_RESOLVE(lib, hl_nvmlDeviceGetMemoryInfo_fn, nvmlDeviceGetMemoryInfo);
    if (init == NULL || count == NULL || handle == NULL || nvml.nvmlShutdown == NULL ||
        nvml.nvmlDeviceGetUtilizationRates == NULL || nvml.nvmlDeviceGetMemoryInfo == NULL)
        return -2;
    if (init() != HL_NVML_SUCCESS) return -3;
    unsigned n = 0;
    if (count(&n) != HL_NVML_SUCCESS) n = 0;
    for (unsigned i = 0; i < n && nvml.r.ndevices < HL_NVML_MAX_DEVICES; i++) {
        hl_nvml_device *d = &nvml.r.devices[nvml.r.ndevices];
        hl_nvmlMemory_t memory;
        if (handle(i, &nvml.handles[nvml.r.ndevices]) != HL_NVML_SUCCESS)
            continue; /* e.g. no permission */
        memset(d, 0, sizeof(*d));
        d->index = i;
        if (get_name == NULL ||
            get_name(nvml.handles[nvml.r.ndevices], d->name, sizeof(d->name)) != HL_NVML_SUCCESS)
            snprintf(d->name, sizeof(d->name), "GPU %u", i);
        d->name[sizeof(d->name) - 1] = '\0';
        if (nvml.nvmlDeviceGetMemoryInfo(nvml.handles[nvml.r.ndevices], &memory) == HL_NVML_SUCCESS)
            d->memory_total = memory.total;
        nvml.r.ndevices++;
    }
    if (nvml.r.ndevices == 0) {
        nvml.nvmlShutdown();
        return -4;
    }
    return 0;
}

/* A point of every device's timelines at t (ns since the session's start). */
static void sample_locked(uint64_t t) {
    HL_ASSERT_ENGINE_LOCKED();
    HL_ASSERT(nvml.r.ndevices <= HL_NVML_MAX_DEVICES);
    for (unsigned i = 0; i < nvml.r.ndevices; i++) {
        hl_nvml_device *d = &nvml.r.devices[i];
        hl_nvmlUtilization_t utilization;
        hl_nvmlMemory_t memory;
        if (nvml.nvmlDeviceGetUtilizationRates(nvml.handles[i], &utilization) == HL_NVML_SUCCESS &&
            utilization.gpu <= 100) {
            d->samples++;
            d->util_sum += utilization.gpu;
            if (utilization.gpu == 0) d->idle_samples++;
            (void)hl_timeline_add(&d->util, HL_NVML_TIMELINE_BUCKETS, t, utilization.gpu);
        }
        if (nvml.nvmlDeviceGetMemoryInfo(nvml.handles[i], &memory) == HL_NVML_SUCCESS) {
            d->memory_total = memory.total;
            if (memory.used > d->used_peak || d->used_peak_t_ns == 0) {
                if (memory.used > d->used_peak) d->used_peak = memory.used;
                d->used_peak_t_ns = t;
            }
            (void)hl_timeline_add(&d->used, HL_NVML_TIMELINE_BUCKETS, t, (int64_t)memory.used);
        }
    }
}

void hl_nvml_start_locked(uint64_t start_ns) {
    HL_ASSERT_ENGINE_LOCKED();
    nvml.on = 1;
    nvml.start_ns = start_ns;
    sample_locked(0); /* a first point at the start */
    nvml.next_sample_ns = start_ns + SAMPLE_PERIOD_NS;
}

void hl_nvml_tick_locked(uint64_t now_ns) {
    HL_ASSERT_ENGINE_LOCKED();
    if (!nvml.on || now_ns < nvml.next_sample_ns) return;
    nvml.next_sample_ns = now_ns + SAMPLE_PERIOD_NS;
    sample_locked(now_ns - nvml.start_ns);
}

void hl_nvml_stop_locked(void) {
    HL_ASSERT_ENGINE_LOCKED();
    if (!nvml.on) return;
    sample_locked(hl_now_ns() - nvml.start_ns); /* a last point at the end */
    nvml.nvmlShutdown();
    nvml.on = 0; /* the devices' results stay readable */
}

void hl_nvml_reset_locked(void) {
    HL_ASSERT_ENGINE_LOCKED();
    for (unsigned i = 0; i < nvml.r.ndevices; i++) {
        hl_timeline_free(&nvml.r.devices[i].util);
        hl_timeline_free(&nvml.r.devices[i].used);
    }
    memset(&nvml.r, 0, sizeof(nvml.r));
    nvml.next_sample_ns = 0;
}

void hl_nvml_after_fork_child(void) {
    nvml.on = 0;
}
