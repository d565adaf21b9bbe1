/* gpu.c: GPU profiling through NVML and CUPTI, loaded at run time. See gpu.h.
 *
 * Device level (NVML): a thread of this part's own (the poller, below) reads every 100 ms (NVML's
 * own utilisation figure is a duty cycle over a driver period of 1/6 s to 1 s, so sampling
 * faster only repeats values) each device's utilisation and memory in use into per-device
 * timelines and counters (mean utilisation, the share of samples at 0%, peak memory).
 *
 * Line level (CUPTI): heatline subscribes to the driver API's callbacks, which every framework's
 * launches go through (torch, CuPy, Numba, JAX, Triton). Each driver function is classified once
 * by name (launch, copy, memset, allocation, free, or of no interest), and cached per callback id.
 * At the entry of a launch, copy or memset the calling thread's line is found with the walker the
 * memory hooks use (hl_engine_current_line: the thread's own stack, no GIL needed) and stored in a
 * ring under CUPTI's correlation id. CUPTI's activity records (concurrent kernels, memcpy, memset)
 * carry the same correlation id and the operation's device start and end: when CUPTI hands over a
 * completed buffer, each record is matched to its line through the ring, and its duration (and
 * bytes, for copies) charged to the line and, for kernels, to the kernel table. Allocations and
 * frees are read at the exit of the call from its parameters (size, address) when it succeeded.
 *
 * The ring holds the last 2^20 operations launched; a record whose slot was overwritten by a
 * later launch before the record arrived is counted as unmatched, as is time launched with no
 * user frame on the stack.
 *
 * Failure is never the program's problem: a library that does not load, a function that fails,
 * or another profiler holding CUPTI (CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) leaves a
 * warning string in the results and GPU profiling (or its CUPTI part) off.
 */
#define _GNU_SOURCE
#include "gpu.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "array.h"
#include "clock.h"
#include "engine.h"
#include "gpu_abi.h"

#define SAMPLE_PERIOD_NS 100000000u /* NVML every 100 ms */
#define PAUSED_POLL_NS 10000000u    /* how soon sampling goes on once profiling is resumed */
#define RING_SIZE (1u << 20)        /* correlation ids kept in flight */
#define BUFFER_BYTES (4u << 20)     /* activity buffers handed to CUPTI */
#define CBID_TABLE 8192             /* driver callback ids classified and cached */

enum op_class {
    OP_UNKNOWN = 0,
    OP_NONE,
    OP_LAUNCH,
    OP_COPY,
    OP_MEMSET,
    OP_ALLOC,
    OP_ALLOC_PITCH,
    OP_FREE
};

typedef struct ring_slot {
    uint32_t correlation; /* 0: empty */
    uint32_t line;
} ring_slot;

typedef struct live_alloc {
    uint64_t address, bytes;
    uint32_t line;
} live_alloc;

static struct {
    /* NVML */
    void *nvml_lib;
    hl_nvmlShutdown_fn nvmlShutdown;
    hl_nvmlDeviceGetUtilizationRates_fn nvmlDeviceGetUtilizationRates;
    hl_nvmlDeviceGetMemoryInfo_fn nvmlDeviceGetMemoryInfo;
    hl_nvmlDevice_t handles[HL_GPU_MAX_DEVICES];
    int nvml_on; /* sampling (hl_gpu_results.nvml stays set after stop) */
    uint64_t start_ns, next_sample_ns;
    /* CUPTI */
    void *cupti_lib;
    hl_CUpti_SubscriberHandle subscriber;
    hl_cuptiUnsubscribe_fn cuptiUnsubscribe;
    hl_cuptiEnableDomain_fn cuptiEnableDomain;
    hl_cuptiActivityDisable_fn cuptiActivityDisable;
    hl_cuptiActivityFlushAll_fn cuptiActivityFlushAll;
    hl_cuptiActivityGetNextRecord_fn cuptiActivityGetNextRecord;
    hl_cuptiActivityGetNumDroppedRecords_fn cuptiActivityGetNumDroppedRecords;
    ring_slot *ring;
    live_alloc *allocs;
    size_t nallocs, allocs_capacity;
    size_t kernels_capacity; /* of r.kernels (r.lines' capacity is r.nlines: all zero-filled) */
    char *(*demangle)(const char *, char *, size_t *, int *);
    int active; /* callbacks record (read without the lock; written under it) */
    hl_gpu_results r;
} gpu;

static uint8_t cbid_class[CBID_TABLE];

const hl_gpu_results *hl_gpu_results_get(void) {
    return &gpu.r;
}

static void warn(const char *format, const char *detail) {
    if (gpu.r.nwarnings >= HL_GPU_MAX_WARNINGS) return;
    snprintf(gpu.r.warnings[gpu.r.nwarnings++], sizeof(gpu.r.warnings[0]), format, detail);
}

/* The library named by the environment variable, or by default. */
static void *load(const char *variable, const char *fallback, const char **name) {
    const char *path = getenv(variable);
    *name = path != NULL && *path != '\0' ? path : fallback;
    return dlopen(*name, RTLD_NOW | RTLD_LOCAL);
}

#define RESOLVE(lib, type, symbol) ((type)dlsym(lib, #symbol))

/* ---- NVML ------------------------------------------------------------------------------- */

static int nvml_open(void) {
    const char *name;
    gpu.nvml_lib =
        gpu.nvml_lib ? gpu.nvml_lib : load("HEATLINE_NVML_LIBRARY", "libnvidia-ml.so.1", &name);
    if (gpu.nvml_lib == NULL) return -1;
    void *lib = gpu.nvml_lib;
    hl_nvmlInit_v2_fn init = RESOLVE(lib, hl_nvmlInit_v2_fn, nvmlInit_v2);
    hl_nvmlDeviceGetCount_v2_fn count =
        RESOLVE(lib, hl_nvmlDeviceGetCount_v2_fn, nvmlDeviceGetCount_v2);
    hl_nvmlDeviceGetHandleByIndex_v2_fn handle =
        RESOLVE(lib, hl_nvmlDeviceGetHandleByIndex_v2_fn, nvmlDeviceGetHandleByIndex_v2);
    hl_nvmlDeviceGetName_fn get_name = RESOLVE(lib, hl_nvmlDeviceGetName_fn, nvmlDeviceGetName);
    gpu.nvmlShutdown = RESOLVE(lib, hl_nvmlShutdown_fn, nvmlShutdown);
    gpu.nvmlDeviceGetUtilizationRates =
        RESOLVE(lib, hl_nvmlDeviceGetUtilizationRates_fn, nvmlDeviceGetUtilizationRates);
    gpu.nvmlDeviceGetMemoryInfo =
        RESOLVE(lib, hl_nvmlDeviceGetMemoryInfo_fn, nvmlDeviceGetMemoryInfo);
    if (init == NULL || count == NULL || handle == NULL || gpu.nvmlShutdown == NULL ||
        gpu.nvmlDeviceGetUtilizationRates == NULL || gpu.nvmlDeviceGetMemoryInfo == NULL)
        return -2;
    if (init() != HL_NVML_SUCCESS) return -3;
    unsigned n = 0;
    if (count(&n) != HL_NVML_SUCCESS) n = 0;
    for (unsigned i = 0; i < n && gpu.r.ndevices < HL_GPU_MAX_DEVICES; i++) {
        hl_gpu_device *d = &gpu.r.devices[gpu.r.ndevices];
        hl_nvmlMemory_t memory;
        if (handle(i, &gpu.handles[gpu.r.ndevices]) != HL_NVML_SUCCESS)
            continue; /* e.g. no permission */
        memset(d, 0, sizeof(*d));
        d->index = i;
        if (get_name == NULL ||
            get_name(gpu.handles[gpu.r.ndevices], d->name, sizeof(d->name)) != HL_NVML_SUCCESS)
            snprintf(d->name, sizeof(d->name), "GPU %u", i);
        d->name[sizeof(d->name) - 1] = '\0';
        if (gpu.nvmlDeviceGetMemoryInfo(gpu.handles[gpu.r.ndevices], &memory) == HL_NVML_SUCCESS)
            d->memory_total = memory.total;
        gpu.r.ndevices++;
    }
    if (gpu.r.ndevices == 0) {
        gpu.nvmlShutdown();
        return -4;
    }
    return 0;
}

static void nvml_sample(uint64_t t) {
    for (unsigned i = 0; i < gpu.r.ndevices; i++) {
        hl_gpu_device *d = &gpu.r.devices[i];
        hl_nvmlUtilization_t utilization;
        hl_nvmlMemory_t memory;
        if (gpu.nvmlDeviceGetUtilizationRates(gpu.handles[i], &utilization) == HL_NVML_SUCCESS &&
            utilization.gpu <= 100) {
            d->samples++;
            d->util_sum += utilization.gpu;
            if (utilization.gpu == 0) d->idle_samples++;
            (void)hl_timeline_add(&d->util, HL_GPU_TIMELINE_BUCKETS, t, utilization.gpu);
        }
        if (gpu.nvmlDeviceGetMemoryInfo(gpu.handles[i], &memory) == HL_NVML_SUCCESS) {
            d->memory_total = memory.total;
            if (memory.used > d->used_peak || d->used_peak_t_ns == 0) {
                if (memory.used > d->used_peak) d->used_peak = memory.used;
                d->used_peak_t_ns = t;
            }
            (void)hl_timeline_add(&d->used, HL_GPU_TIMELINE_BUCKETS, t, (int64_t)memory.used);
        }
    }
}

/* ---- the poller: NVML's own thread ------------------------------------------------------ */

/* NVML is not read from the sampler thread: that thread has a descriptor table of its own
 * (sampler.c), and NVML talks to the driver through descriptors opened in the program's table
 * (by our nvmlInit here, or by the program's own NVML use, which shares the library's state),
 * whose numbers mean nothing, or something else, in the sampler's. The poller is started by a
 * program thread and so shares the program's table, as NVML needs. It exists only while NVML
 * is sampled, blocks every signal, samples only while profiling is on (as the sampler's ticks
 * did), and is joined around os.fork() with the sampler thread (hl_engine_suspend_for_fork),
 * so that a fork sees only the program's threads. */
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
    if (!hl_engine_paused() && gpu.nvml_on) {
        if (now >= gpu.next_sample_ns) {
            gpu.next_sample_ns = now + SAMPLE_PERIOD_NS;
            nvml_sample(now - gpu.start_ns);
        }
        next = gpu.next_sample_ns;
    }
    hl_engine_unlock();
    return next;
}

static void *poll_main(void *unused) {
    (void)unused;
    __atomic_store_n(&poller.tid, (int)gettid(), __ATOMIC_RELEASE);
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
    return NULL;
}

/* life held, engine lock not held. */
static void poller_spawn(void) {
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
    if (err != 0) {
        pthread_cond_destroy(&poller.wake);
        hl_engine_lock();
        warn("GPU device sampling stopped: its thread could not be started (%s)", strerror(err));
        hl_engine_unlock();
    }
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

/* ---- charging (engine lock held) --------------------------------------------------------- */

static hl_gpu_line *line_record(uint32_t line) {
    if (line == HL_NO_LINE) return NULL;
    size_t had = gpu.r.nlines;
    if (HL_ARRAY_RESERVE(gpu.r.lines, gpu.r.nlines, (size_t)line + 1, 64) != 0) return NULL;
    memset(gpu.r.lines + had, 0, (gpu.r.nlines - had) * sizeof(*gpu.r.lines));
    return &gpu.r.lines[line];
}

static void find_demangler(void) {
    void *f = dlsym(RTLD_DEFAULT, "__cxa_demangle");
    if (f == NULL) { /* libstdc++ loaded privately (RTLD_LOCAL), as most extensions do */
        void *lib = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_NOLOAD);
        if (lib != NULL) {
            f = dlsym(lib, "__cxa_demangle");
            dlclose(lib); /* drops only the reference NOLOAD added */
        }
    }
    gpu.demangle = (char *(*)(const char *, char *, size_t *, int *))f;
}

static hl_gpu_kernel *kernel_record(const char *name) {
    if (name == NULL) name = "(unnamed kernel)";
    for (size_t i = 0; i < gpu.r.nkernels; i++) /* few distinct kernels; most recent first */
        if (strcmp(gpu.r.kernels[gpu.r.nkernels - 1 - i].name, name) == 0)
            return &gpu.r.kernels[gpu.r.nkernels - 1 - i];
    if (HL_ARRAY_RESERVE(gpu.r.kernels, gpu.kernels_capacity, gpu.r.nkernels + 1, 16) != 0)
        return NULL;
    hl_gpu_kernel *k = &gpu.r.kernels[gpu.r.nkernels];
    memset(k, 0, sizeof(*k));
    k->name = strdup(name);
    if (k->name == NULL) return NULL;
    if (gpu.demangle == NULL) find_demangler();
    if (gpu.demangle != NULL && name[0] == '_' && name[1] == 'Z') {
        int status = -1;
        char *readable = gpu.demangle(name, NULL, NULL, &status);
        if (status == 0) k->demangled = readable;
        else free(readable);
    }
    gpu.r.nkernels++;
    return k;
}

static void charge_kernel(const char *name, uint32_t line, uint64_t ns) {
    hl_gpu_kernel *k = kernel_record(name);
    if (k == NULL) return;
    k->calls++;
    k->ns += ns;
    for (uint32_t i = 0; i < k->nlines; i++)
        if (k->lines[i].line == line) {
            k->lines[i].calls++;
            k->lines[i].ns += ns;
            return;
        }
    if (k->nlines < HL_GPU_KERNEL_LINES) {
        k->lines[k->nlines++] = (hl_gpu_kernel_line){line, 1, ns};
    } else {
        k->other_lines_calls++;
        k->other_lines_ns += ns;
    }
}

static uint32_t read_u32(const uint8_t *p, size_t offset) {
    uint32_t v;
    memcpy(&v, p + offset, sizeof(v));
    return v;
}

static uint64_t read_u64(const uint8_t *p, size_t offset) {
    uint64_t v;
    memcpy(&v, p + offset, sizeof(v));
    return v;
}

/* The line that launched the operation with this correlation id, or HL_NO_LINE. found: whether
 * the launch was seen at all. */
static uint32_t launching_line(uint32_t correlation, int *found) {
    ring_slot *s = &gpu.ring[correlation & (RING_SIZE - 1)];
    *found = correlation != 0 && s->correlation == correlation;
    return *found ? s->line : HL_NO_LINE;
}

static void charge_record(const uint8_t *record) {
    uint32_t kind = read_u32(record, HL_REC_KIND);
    uint64_t start, end, correlation;
    int found;
    if (kind == HL_CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
        start = read_u64(record, HL_KERNEL_START);
        end = read_u64(record, HL_KERNEL_END);
        correlation = read_u32(record, HL_KERNEL_CORRELATION);
    } else if (kind == HL_CUPTI_ACTIVITY_KIND_MEMCPY || kind == HL_CUPTI_ACTIVITY_KIND_MEMSET) {
        start = read_u64(record, HL_COPY_START);
        end = read_u64(record, HL_COPY_END);
        correlation = read_u32(record, HL_COPY_CORRELATION);
    } else {
        return;
    }
    uint64_t ns = end > start ? end - start : 0; /* both 0: CUPTI could not time it */
    uint32_t line = launching_line((uint32_t)correlation, &found);
    hl_gpu_line *l = line_record(line);
    gpu.r.records++;
    if (l == NULL) {
        gpu.r.unmatched_ns += ns;
        gpu.r.unmatched_records++;
    } else {
        l->gpu_ns += ns;
    }
    if (kind == HL_CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
        const char *name;
        memcpy(&name, record + HL_KERNEL_NAME, sizeof(name));
        charge_kernel(name, line, ns);
    } else if (kind == HL_CUPTI_ACTIVITY_KIND_MEMCPY && l != NULL) {
        uint8_t copy_kind = record[HL_COPY_KIND];
        uint64_t bytes = read_u64(record, HL_COPY_BYTES);
        if (copy_kind == HL_CUPTI_MEMCPY_HTOD || copy_kind == HL_CUPTI_MEMCPY_HTOA)
            l->copy_h2d += bytes;
        else if (copy_kind == HL_CUPTI_MEMCPY_DTOH || copy_kind == HL_CUPTI_MEMCPY_ATOH)
            l->copy_d2h += bytes;
        else l->copy_other += bytes;
    }
}

/* ---- CUPTI callbacks ---------------------------------------------------------------------- */

static void buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
    void *memory = NULL;
    if (posix_memalign(&memory, 8, BUFFER_BYTES) != 0) memory = NULL;
    *buffer = memory;
    *size = memory ? BUFFER_BYTES : 0;
    *max_records = 0; /* as many as fit */
}

static void buffer_completed(hl_CUcontext context, uint32_t stream, uint8_t *buffer, size_t size,
                             size_t valid_size) {
    (void)size;
    hl_engine_lock();
    if (__atomic_load_n(&gpu.active, __ATOMIC_RELAXED) && gpu.ring != NULL) {
        void *record = NULL;
        while (valid_size > 0 &&
               gpu.cuptiActivityGetNextRecord(buffer, valid_size, &record) == HL_CUPTI_SUCCESS)
            charge_record(record);
        size_t dropped = 0;
        if (gpu.cuptiActivityGetNumDroppedRecords != NULL &&
            gpu.cuptiActivityGetNumDroppedRecords(context, stream, &dropped) == HL_CUPTI_SUCCESS)
            gpu.r.dropped_records += dropped;
    }
    hl_engine_unlock();
    free(buffer);
}

static int classify(const char *name) {
    if (name == NULL) return OP_NONE;
    if (strncmp(name, "cuLaunch", 8) == 0 || strncmp(name, "cuGraphLaunch", 13) == 0)
        return OP_LAUNCH;
    if (strncmp(name, "cuMemcpy", 8) == 0) return OP_COPY;
    if (strncmp(name, "cuMemset", 8) == 0) return OP_MEMSET;
    if (strncmp(name, "cuMemAllocPitch", 15) == 0) return OP_ALLOC_PITCH;
    if (strncmp(name, "cuMemAllocHost", 14) == 0) return OP_NONE; /* pinned host memory */
    if (strncmp(name, "cuMemAlloc", 10) == 0) return OP_ALLOC;
    if (strncmp(name, "cuMemFreeHost", 13) == 0) return OP_NONE;
    if (strncmp(name, "cuMemFree", 9) == 0) return OP_FREE;
    return OP_NONE;
}

static void alloc_changed(int64_t delta, uint32_t line) {
    gpu.r.alloc_live += delta;
    if (gpu.r.alloc_live > gpu.r.alloc_peak) {
        gpu.r.alloc_peak = gpu.r.alloc_live;
        gpu.r.alloc_peak_t_ns = hl_now_ns() - gpu.start_ns;
        gpu.r.alloc_peak_line = line;
    }
}

static void record_alloc(uint64_t address, uint64_t bytes, uint32_t line) {
    hl_gpu_line *l = line_record(line);
    if (l != NULL) l->alloc += bytes;
    if (HL_ARRAY_RESERVE(gpu.allocs, gpu.allocs_capacity, gpu.nallocs + 1, 64) != 0) return;
    gpu.allocs[gpu.nallocs++] = (live_alloc){address, bytes, line};
    alloc_changed((int64_t)bytes, line);
}

static void record_free(uint64_t address) {
    for (size_t i = gpu.nallocs; i-- > 0;) /* device allocations are few (caching allocators) */
        if (gpu.allocs[i].address == address) {
            alloc_changed(-(int64_t)gpu.allocs[i].bytes, HL_NO_LINE);
            gpu.allocs[i] = gpu.allocs[--gpu.nallocs];
            return;
        }
}

static void api_callback(void *userdata, int domain, uint32_t cbid, const void *cbdata) {
    (void)userdata;
    if (domain != HL_CUPTI_CB_DOMAIN_DRIVER_API || !__atomic_load_n(&gpu.active, __ATOMIC_RELAXED))
        return;
    const uint8_t *data = cbdata;
    int op = cbid < CBID_TABLE ? __atomic_load_n(&cbid_class[cbid], __ATOMIC_RELAXED) : OP_UNKNOWN;
    if (op == OP_UNKNOWN) {
        const char *name;
        memcpy(&name, data + HL_CB_FUNCTION_NAME, sizeof(name));
        op = classify(name);
        if (cbid < CBID_TABLE) __atomic_store_n(&cbid_class[cbid], (uint8_t)op, __ATOMIC_RELAXED);
    }
    if (op == OP_NONE) return;
    uint32_t site = read_u32(data, HL_CB_SITE);
    const uint8_t *params;
    memcpy(&params, data + HL_CB_PARAMS, sizeof(params));
    if (op == OP_LAUNCH || op == OP_COPY || op == OP_MEMSET) {
        if (site != HL_CUPTI_API_ENTER) return;
        uint32_t correlation = read_u32(data, HL_CB_CORRELATION_ID);
        hl_engine_lock();
        if (gpu.active && gpu.ring != NULL) {
            uint32_t line = hl_engine_current_line();
            gpu.ring[correlation & (RING_SIZE - 1)] = (ring_slot){correlation, line};
            hl_gpu_line *l = line_record(line);
            if (l != NULL) l->launches++;
        }
        hl_engine_unlock();
        return;
    }
    if (site != HL_CUPTI_API_EXIT || params == NULL) return;
    const int *result;
    memcpy(&result, data + HL_CB_RETURN_VALUE, sizeof(result));
    if (result != NULL && *result != 0) return; /* the call failed: nothing changed */
    hl_engine_lock();
    if (gpu.active) {
        if (op == OP_FREE) {
            record_free(read_u64(params, HL_PARAM_FREE_DPTR));
        } else {
            const uint64_t *dptr;
            memcpy(&dptr, params + HL_PARAM_ALLOC_DPTR, sizeof(dptr));
            uint64_t bytes = read_u64(params, HL_PARAM_ALLOC_BYTES);
            if (op == OP_ALLOC_PITCH) {
                const size_t *pitch;
                memcpy(&pitch, params + HL_PARAM_PITCH_PITCH, sizeof(pitch));
                bytes = pitch ? *pitch * read_u64(params, HL_PARAM_PITCH_HEIGHT) : 0;
            }
            if (dptr != NULL) record_alloc(*dptr, bytes, hl_engine_current_line());
        }
    }
    hl_engine_unlock();
}

/* ---- CUPTI start and stop ---------------------------------------------------------------- */

static const int activity_kinds[] = {HL_CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                     HL_CUPTI_ACTIVITY_KIND_MEMCPY, HL_CUPTI_ACTIVITY_KIND_MEMSET};
#define NKINDS (sizeof(activity_kinds) / sizeof(activity_kinds[0]))

static void cupti_warning(const char *what, hl_CUptiResult rc) {
    char detail[160];
    const char *text = NULL;
    hl_cuptiGetResultString_fn describe =
        RESOLVE(gpu.cupti_lib, hl_cuptiGetResultString_fn, cuptiGetResultString);
    if (describe == NULL || describe(rc, &text) != HL_CUPTI_SUCCESS || text == NULL) text = "error";
    snprintf(detail, sizeof(detail), "%s failed: %s (%d)", what, text, rc);
    warn("GPU kernel tracing is off: CUPTI %s; per-line GPU time is not measured", detail);
}

static int cupti_open(void) {
    const char *name;
    gpu.cupti_lib =
        gpu.cupti_lib ? gpu.cupti_lib : load("HEATLINE_CUPTI_LIBRARY", "libcupti.so", &name);
    if (gpu.cupti_lib == NULL) {
        const char *why = dlerror();
        warn("GPU kernel tracing is off: CUPTI could not be loaded (%s); per-line GPU time is not "
             "measured (install it, e.g. pip install nvidia-cuda-cupti-cu12, or point "
             "HEATLINE_CUPTI_LIBRARY at libcupti.so)",
             why ? why : "unknown error");
        return -1;
    }
    void *lib = gpu.cupti_lib;
    hl_cuptiSubscribe_fn subscribe = RESOLVE(lib, hl_cuptiSubscribe_fn, cuptiSubscribe);
    hl_cuptiActivityEnable_fn enable = RESOLVE(lib, hl_cuptiActivityEnable_fn, cuptiActivityEnable);
    hl_cuptiActivityRegisterCallbacks_fn register_buffers =
        RESOLVE(lib, hl_cuptiActivityRegisterCallbacks_fn, cuptiActivityRegisterCallbacks);
    gpu.cuptiUnsubscribe = RESOLVE(lib, hl_cuptiUnsubscribe_fn, cuptiUnsubscribe);
    gpu.cuptiEnableDomain = RESOLVE(lib, hl_cuptiEnableDomain_fn, cuptiEnableDomain);
    gpu.cuptiActivityDisable = RESOLVE(lib, hl_cuptiActivityDisable_fn, cuptiActivityDisable);
    gpu.cuptiActivityFlushAll = RESOLVE(lib, hl_cuptiActivityFlushAll_fn, cuptiActivityFlushAll);
    gpu.cuptiActivityGetNextRecord =
        RESOLVE(lib, hl_cuptiActivityGetNextRecord_fn, cuptiActivityGetNextRecord);
    gpu.cuptiActivityGetNumDroppedRecords =
        RESOLVE(lib, hl_cuptiActivityGetNumDroppedRecords_fn, cuptiActivityGetNumDroppedRecords);
    if (subscribe == NULL || enable == NULL || register_buffers == NULL ||
        gpu.cuptiUnsubscribe == NULL || gpu.cuptiEnableDomain == NULL ||
        gpu.cuptiActivityDisable == NULL || gpu.cuptiActivityFlushAll == NULL ||
        gpu.cuptiActivityGetNextRecord == NULL) {
        warn("GPU kernel tracing is off: %s lacks functions heatline needs", "the CUPTI library");
        return -1;
    }
    gpu.ring = calloc(RING_SIZE, sizeof(*gpu.ring));
    if (gpu.ring == NULL) {
        warn("GPU kernel tracing is off: %s", "out of memory");
        return -1;
    }
    hl_CUptiResult rc = subscribe(&gpu.subscriber, api_callback, NULL);
    if (rc == HL_CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
        warn("GPU kernel tracing is off: CUPTI is in use by another profiler (%s); only device "
             "utilisation and memory are reported",
             "torch.profiler, Nsight or similar");
        goto fail;
    }
    if (rc != HL_CUPTI_SUCCESS) {
        cupti_warning("cuptiSubscribe", rc);
        goto fail;
    }
    __atomic_store_n(&gpu.active, 1, __ATOMIC_RELAXED);
    if ((rc = register_buffers(buffer_requested, buffer_completed)) != HL_CUPTI_SUCCESS) {
        cupti_warning("cuptiActivityRegisterCallbacks", rc);
        goto fail_subscribed;
    }
    if ((rc = gpu.cuptiEnableDomain(1, gpu.subscriber, HL_CUPTI_CB_DOMAIN_DRIVER_API)) !=
        HL_CUPTI_SUCCESS) {
        cupti_warning("cuptiEnableDomain", rc);
        goto fail_subscribed;
    }
    for (size_t i = 0; i < NKINDS; i++)
        if ((rc = enable(activity_kinds[i])) != HL_CUPTI_SUCCESS) {
            cupti_warning("cuptiActivityEnable", rc);
            for (size_t j = 0; j < i; j++) (void)gpu.cuptiActivityDisable(activity_kinds[j]);
            (void)gpu.cuptiEnableDomain(0, gpu.subscriber, HL_CUPTI_CB_DOMAIN_DRIVER_API);
            goto fail_subscribed;
        }
    return 0;

fail_subscribed:
    __atomic_store_n(&gpu.active, 0, __ATOMIC_RELAXED);
    (void)gpu.cuptiUnsubscribe(gpu.subscriber);
fail:
    free(gpu.ring);
    gpu.ring = NULL;
    return -1;
}

/* Forgets all results (engine lock held). */
static void gpu_reset(void) {
    free(gpu.r.lines);
    for (size_t i = 0; i < gpu.r.nkernels; i++) {
        free(gpu.r.kernels[i].name);
        free(gpu.r.kernels[i].demangled);
    }
    free(gpu.r.kernels);
    for (unsigned i = 0; i < gpu.r.ndevices; i++) {
        hl_timeline_free(&gpu.r.devices[i].util);
        hl_timeline_free(&gpu.r.devices[i].used);
    }
    free(gpu.allocs);
    gpu.allocs = NULL;
    gpu.nallocs = gpu.allocs_capacity = 0;
    gpu.kernels_capacity = 0;
    memset(&gpu.r, 0, sizeof(gpu.r));
    gpu.r.alloc_peak_line = HL_NO_LINE;
}

static void gpu_start(const hl_config *config) {
    int mode = config->gpu_mode;
    hl_engine_lock();
    gpu_reset();
    gpu.start_ns = hl_now_ns();
    gpu.next_sample_ns = 0;
    hl_engine_unlock();
    if (mode == HL_GPU_OFF) return;

    int nvml = nvml_open();
    if (nvml != 0) {
        if (mode == HL_GPU_AUTO) return; /* no NVIDIA GPU here: nothing changes */
        const char *why = nvml == -1 ? dlerror() : "libnvidia-ml";
        warn(nvml == -1   ? "GPU profiling is off: NVML could not be loaded (%s)"
             : nvml == -4 ? "GPU profiling is off: NVML reports no usable GPU (%s)"
                          : "GPU profiling is off: NVML could not be initialised (%s)",
             why ? why : "unknown error");
        return;
    }
    int cupti = cupti_open();
    hl_engine_lock();
    gpu.r.nvml = gpu.nvml_on = 1;
    gpu.r.cupti = cupti == 0;
    nvml_sample(0); /* a first point at the start */
    gpu.next_sample_ns = gpu.start_ns + SAMPLE_PERIOD_NS;
    hl_engine_unlock();
    pthread_mutex_lock(&poller.life);
    poller_spawn();
    pthread_mutex_unlock(&poller.life);
}

static void gpu_stop(void) {
    if (__atomic_load_n(&gpu.active, __ATOMIC_RELAXED)) {
        (void)gpu.cuptiActivityFlushAll(
            HL_CUPTI_ACTIVITY_FLAG_FLUSH_FORCED); /* completes buffers */
        for (size_t i = 0; i < NKINDS; i++) (void)gpu.cuptiActivityDisable(activity_kinds[i]);
        (void)gpu.cuptiEnableDomain(0, gpu.subscriber, HL_CUPTI_CB_DOMAIN_DRIVER_API);
        (void)gpu.cuptiActivityFlushAll(HL_CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
        (void)gpu.cuptiUnsubscribe(gpu.subscriber);
    }
    pthread_mutex_lock(&poller.life);
    poller_join();
    poller.suspended = 0; /* a fork's pending restart finds nothing to restart */
    pthread_mutex_unlock(&poller.life);
    hl_engine_lock();
    __atomic_store_n(&gpu.active, 0, __ATOMIC_RELAXED);
    free(gpu.ring);
    gpu.ring = NULL;
    if (gpu.nvml_on) {
        nvml_sample(hl_now_ns() - gpu.start_ns); /* a last point at the end */
        gpu.nvmlShutdown();
        gpu.nvml_on = 0; /* the devices' results stay readable */
    }
    hl_engine_unlock();
}

static void gpu_after_fork_child(void) {
    /* CUPTI and NVML state does not survive fork(); the child records nothing. Memory is not
     * freed: another thread of the parent may have been using it at the moment of the fork. */
    __atomic_store_n(&gpu.active, 0, __ATOMIC_RELAXED);
    gpu.ring = NULL;
    gpu.nvml_on = 0;
    /* No poller runs here (only the forking thread goes on), whatever the parent's record
     * says, and another thread may have held its locks at the fork. */
    pthread_mutex_init(&poller.life, NULL);
    pthread_mutex_init(&poller.lock, NULL);
    poller.running = poller.suspended = poller.stop = 0;
}

static void gpu_suspend_for_fork(void) {
    pthread_mutex_lock(&poller.life);
    if (poller.running) {
        poller_join();
        hl_engine_wait_until_gone(__atomic_load_n(&poller.tid, __ATOMIC_ACQUIRE));
        poller.suspended = 1;
    }
    pthread_mutex_unlock(&poller.life);
}

static void gpu_resume_after_fork(void) {
    pthread_mutex_lock(&poller.life);
    if (poller.suspended) { /* NVML is still sampled: gpu_stop clears this first */
        poller.suspended = 0;
        poller_spawn();
    }
    pthread_mutex_unlock(&poller.life);
}

const hl_engine_part hl_gpu_part = {
    .start_released = gpu_start,
    .stop_released = gpu_stop,
    .after_fork_child = gpu_after_fork_child,
    .suspend_for_fork = gpu_suspend_for_fork,
    .resume_after_fork = gpu_resume_after_fork,
};
