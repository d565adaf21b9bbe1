/* nvml.c: GPU device sampling through NVML. See nvml.h.
 *
 * A thread of this room's own (the poller, below) reads every 100 ms each device's utilisation
 * and memory in use into per-device timelines and counters (mean utilisation, the share of
 * samples at 0%, peak memory).
 *
 * NVML is not read from the sampler thread: that thread has a descriptor table of its own
 * (sampler.c), and NVML talks to the driver through descriptors opened in the program's table
 * (by our nvmlInit, or by the program's own NVML use, which shares the library's state), whose
 * numbers mean nothing, or something else, in the sampler's. The poller is started by a program
 * thread and so shares the program's table, as NVML needs. It exists only while NVML is
 * sampled, blocks every signal, samples only while profiling is on (as the sampler's ticks
 * did), and is joined around os.fork() with the sampler thread (hl_engine_suspend_for_fork), so
 * that a fork sees only the program's threads.
 */
#define _GNU_SOURCE
#include "nvml.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "engine_part.h" /* the lock its results are read and written under */
#include "gpu_abi.h"
#include "native.h"

#define SAMPLE_PERIOD_NS 100000000u /* every 100 ms */
#define PAUSED_POLL_NS 10000000u    /* how soon sampling goes on once profiling is resumed */

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

/* ---- the poller: NVML's own thread ---------------------------------------------------------- */

static struct {
    pthread_mutex_t life; /* serialises starting and joining, which program threads do */
    pthread_mutex_t lock; /* with wake, the thread's sleep and stop */
    pthread_cond_t wake;
    pthread_t thread;
    int tid;       /* its kernel id, to wait until the process stops counting it */
    int running;   /* started and not joined (life) */
    int suspended; /* joined for a fork, to start again after it (life) */
    int stop;      /* asks it to finish (lock) */
} poller = {.life = PTHREAD_MUTEX_INITIALIZER, .lock = PTHREAD_MUTEX_INITIALIZER};

/* Samples the devices when it is time; returns when to look next. */
static uint64_t poll_once(void) {
    hl_engine_lock();
    uint64_t now = hl_now_ns(), next = now + PAUSED_POLL_NS;
    if (!hl_engine_paused() && nvml.on) {
        if (now >= nvml.next_sample_ns) {
            nvml.next_sample_ns = now + SAMPLE_PERIOD_NS;
            sample_locked(now - nvml.start_ns);
        }
        next = nvml.next_sample_ns;
    }
    hl_engine_unlock();
    return next;
}

static void *poll_main(void *unused) {
    (void)unused;
    __atomic_store_n(&poller.tid, (int)gettid(), __ATOMIC_RELEASE);
    hl_native_own_thread((long)gettid(), 1); /* not a thread of the program's */
    uint64_t next = poll_once();
    pthread_mutex_lock(&poller.lock);
    while (!poller.stop) {
        struct timespec until = {(time_t)(next / 1000000000u), (long)(next % 1000000000u)};
        int rc = pthread_cond_timedwait(&poller.wake, &poller.lock, &until);
        if (poller.stop) break;
        if (rc != ETIMEDOUT && hl_now_ns() < next) continue; /* spurious wake-up */
        pthread_mutex_unlock(&poller.lock);                   /* never held with the engine's */
        next = poll_once();
        pthread_mutex_lock(&poller.lock);
    }
    pthread_mutex_unlock(&poller.lock);
    hl_native_own_thread((long)gettid(), 0);
    return NULL;
}

/* life held, engine lock not held. Returns 0 or the pthread_create error. */
static int poller_spawn(void) {
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&poller.wake, &attr);
    pthread_condattr_destroy(&attr);
    poller.stop = 0;
    sigset_t all, previous; /* the program's signals are never delivered to it */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &previous);
    int err = pthread_create(&poller.thread, NULL, poll_main, NULL);
    pthread_sigmask(SIG_SETMASK, &previous, NULL);
    poller.running = err == 0;
    if (err != 0) pthread_cond_destroy(&poller.wake);
    return err;
}

/* life held, engine lock not held (the thread may be waiting for it). */
static void poller_join(void) {
    if (!poller.running) return;
    pthread_mutex_lock(&poller.lock);
    poller.stop = 1;
    pthread_cond_signal(&poller.wake);
    pthread_mutex_unlock(&poller.lock);
    pthread_join(poller.thread, NULL);
    poller.running = 0;
    pthread_cond_destroy(&poller.wake);
}

int hl_nvml_poller_start(void) {
    pthread_mutex_lock(&poller.life);
    int err = poller_spawn();
    pthread_mutex_unlock(&poller.life);
    return err;
}

void hl_nvml_poller_stop(void) {
    pthread_mutex_lock(&poller.life);
    poller_join();
    poller.suspended = 0; /* a fork's pending restart finds nothing to restart */
    pthread_mutex_unlock(&poller.life);
}

void hl_nvml_suspend_for_fork(void) {
    pthread_mutex_lock(&poller.life);
    if (poller.running) {
        poller_join();
        hl_engine_wait_until_gone(__atomic_load_n(&poller.tid, __ATOMIC_ACQUIRE));
        poller.suspended = 1;
    }
    pthread_mutex_unlock(&poller.life);
}

void hl_nvml_resume_after_fork(void) {
    pthread_mutex_lock(&poller.life);
    if (poller.suspended) { /* NVML is still sampled: hl_nvml_poller_stop clears this first */
        poller.suspended = 0;
        (void)poller_spawn(); /* failing, the run goes on without device samples */
    }
    pthread_mutex_unlock(&poller.life);
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
    /* No poller runs here (only the forking thread goes on), whatever the parent's record
     * says, and another thread may have held its locks at the fork. */
    pthread_mutex_init(&poller.life, NULL);
    pthread_mutex_init(&poller.lock, NULL);
    poller.running = poller.suspended = poller.stop = 0;
}
