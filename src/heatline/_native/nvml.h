/* nvml.h: GPU device sampling through NVML: each device's utilisation and memory in use over
 * time, read every 100 ms by a thread of its own (the poller: nvml.c says why not the sampler). One of the GPU part's two libraries (gpu.h
 * starts, stops and reports them together; kernel time per line is cupti.h's).
 *
 * NVML's utilisation figure is a duty cycle ("a kernel was running") over a driver period of
 * 1/6 s to 1 s, so sampling faster than every 100 ms would only repeat values; both figures are
 * device-wide (every process on the device). The library is bound from a handle the GPU part
 * loaded (gpu.c), so nothing of NVML is needed to build or to run without a GPU.
 *
 * Results are read and written under the engine lock (engine_part.h).
 */
#ifndef HEATLINE_NVML_H
#define HEATLINE_NVML_H

#include <stdint.h>

#include "stats.h"

#define HL_NVML_MAX_DEVICES 16
#define HL_NVML_TIMELINE_BUCKETS 256

typedef struct hl_nvml_device {
    unsigned index;
    char name[96];
    uint64_t memory_total;
    uint64_t samples, util_sum, idle_samples; /* utilisation samples, their sum, those at 0 */
    uint64_t used_peak;
    uint64_t used_peak_t_ns;
    hl_timeline util, used; /* utilisation (%) and memory used (bytes) over time */
} hl_nvml_device;

typedef struct hl_nvml_results {
    hl_nvml_device devices[HL_NVML_MAX_DEVICES];
    unsigned ndevices;
} hl_nvml_results;

/* Binds NVML's functions from lib (a dlopen handle), initialises it and lists the devices into
 * the results. Returns 0, or why not: -2 when lib lacks a function, -3 when NVML could not be
 * initialised, -4 when it lists no usable device (NVML is then shut down again). */
int hl_nvml_open(void *lib);

/* Engine lock held. Start: sampling is on, a first point is taken at t = 0 (start_ns, the
 * session's start, is the origin of every timeline). Stop: a last point, then NVML is shut
 * down; the results stay readable. Reset: forgets the results. */
void hl_nvml_start_locked(uint64_t start_ns);
void hl_nvml_stop_locked(void);

/* Engine lock NOT held (the poller takes it). After hl_nvml_start_locked: the poller samples
 * every 100 ms while profiling is on (returns 0 or the pthread_create error); before
 * hl_nvml_stop_locked: it is joined. Around os.fork(): joined before, started again in the
 * parent after (the GPU part's suspend_for_fork/resume_after_fork). */
int hl_nvml_poller_start(void);
void hl_nvml_poller_stop(void);
void hl_nvml_suspend_for_fork(void);
void hl_nvml_resume_after_fork(void);
void hl_nvml_reset_locked(void);

/* In the child of fork(): NVML's state does not survive it; the child samples nothing. */
void hl_nvml_after_fork_child(void);

/* The results (engine lock held). */
const hl_nvml_results *hl_nvml_results_get_locked(void);

#endif
