/* cupti.c: GPU kernel tracing through CUPTI. See cupti.h.
 *
 * heatline subscribes to the driver API's callbacks, which every framework's launches go through
 * (torch, CuPy, Numba, JAX, Triton). Each driver function is classified once by name (launch, copy,
 * memset, allocation, free, or of no interest), and cached per callback id. At the entry of a
 * launch, copy or memset the calling thread's line is found with the walker the memory hooks use
 * (hl_engine_current_line_locked: the thread's own stack, no GIL needed) and stored in a ring under
 * CUPTI's correlation id. CUPTI's activity records (concurrent kernels, memcpy, memset) carry the
 * same correlation id and the operation's device start and end: when CUPTI hands over a completed
 * buffer, each record is matched to its line through the ring, and its duration (and bytes, for
 * copies) charged to the line and, for kernels, to the kernel table. Allocations and frees are read
 * at the exit of the call from its parameters (size, address) when it succeeded.
 *
 * The ring holds the last 2^20 operations launched; a record whose slot was overwritten by a
 * later launch before the record arrived is counted as unmatched, as is time launched with no
 * user frame on the stack.
 *
 * Failure is never the program's problem: a function that fails, or another profiler holding
 * CUPTI (CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED), leaves tracing off with a warning for
 * the GPU part to report.
 */
#define _GNU_SOURCE
#include "cupti.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "clock.h"
#include "engine_part.h"
#include "gpu_abi.h"
#include "unaligned.h"

#define RING_SIZE (1u << 20)    /* correlation ids kept in flight */
#define BUFFER_BYTES (4u << 20) /* activity buffers handed to CUPTI */
#define CBID_TABLE 8192         /* driver callback ids classified and cached */

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
    void *lib;
    hl_CUpti_SubscriberHandle subscriber;
    hl_cuptiUnsubscribe_fn cuptiUnsubscribe;
    hl_cuptiEnableDomain_fn cuptiEnableDomain;
    hl_cuptiActivityDisable_fn cuptiActivityDisable;
    hl_cuptiActivityFlushAll_fn cuptiActivityFlushAll;
    hl_cuptiActivityGetNextRecord_fn cuptiActivityGetNextRecord;
    hl_cuptiActivityGetNumDroppedRecords_fn cuptiActivityGetNumDroppedRecords;
    uint64_t start_ns;
    ring_slot *ring;
    live_alloc *allocs;
    size_t nallocs, allocs_capacity;
    size_t kernels_capacity; /* of r.kernels (r.lines' capacity is r.nlines: all zero-filled) */
    char *(*demangle)(const char *, char *, size_t *, int *);
    int active; /* callbacks record (read without the lock; written under it) */
    hl_cupti_results r;
} cupti;

static uint8_t cbid_class[CBID_TABLE];

const hl_cupti_results *hl_cupti_results_get_locked(void) {
    HL_ASSERT_ENGINE_LOCKED();
    return &cupti.r;
}

/* ---- charging (engine lock held) --------------------------------------------------------- */

static hl_cupti_line *line_record_locked(uint32_t line) {
    HL_ASSERT_ENGINE_LOCKED();
    if (line == HL_NO_LINE) return NULL;
    /* An id of this session's tables: the ring and these results are reset with them. */
    HL_ASSERT(line < hl_engine_stats_locked()->nlines);
    size_t had = cupti.r.nlines;
    if (HL_ARRAY_RESERVE(cupti.r.lines, cupti.r.nlines, (size_t)line + 1, 64) != 0) return NULL;
    memset(cupti.r.lines + had, 0, (cupti.r.nlines - had) * sizeof(*cupti.r.lines));
    return &cupti.r.lines[line];
}

static void find_demangler_locked(void) {
    HL_ASSERT_ENGINE_LOCKED();
    void *f = dlsym(RTLD_DEFAULT, "__cxa_demangle");
    if (f == NULL) { /* libstdc++ loaded privately (RTLD_LOCAL), as most extensions do */
        void *lib = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_NOLOAD);
        if (lib != NULL) {
            f = dlsym(lib, "__cxa_demangle");
            dlclose(lib); /* drops only the reference NOLOAD added */
        }
    }
    cupti.demangle = (char *(*)(const char *, char *, size_t *, int *))f;
}

static hl_cupti_kernel *kernel_record_locked(const char *name) {
    HL_ASSERT_ENGINE_LOCKED();
    if (name == NULL) name = "(unnamed kernel)";
    for (size_t i = 0; i < cupti.r.nkernels; i++) /* few distinct kernels; most recent first */
        if (strcmp(cupti.r.kernels[cupti.r.nkernels - 1 - i].name, name) == 0)
            return &cupti.r.kernels[cupti.r.nkernels - 1 - i];
    if (HL_ARRAY_RESERVE(cupti.r.kernels, cupti.kernels_capacity, cupti.r.nkernels + 1, 16) != 0)
        return NULL;
    hl_cupti_kernel *k = &cupti.r.kernels[cupti.r.nkernels];
    memset(k, 0, sizeof(*k));
    k->name = strdup(name);
    if (k->name == NULL) return NULL;
    if (cupti.demangle == NULL) find_demangler_locked();
    if (cupti.demangle != NULL && name[0] == '_' && name[1] == 'Z') {
        int status = -1;
        char *readable = cupti.demangle(name, NULL, NULL, &status);
        if (status == 0) k->demangled = readable;
        else free(readable);
    }
    cupti.r.nkernels++;
    return k;
}

static void charge_kernel_locked(const char *name, uint32_t line, uint64_t ns) {
    HL_ASSERT_ENGINE_LOCKED();
    hl_cupti_kernel *k = kernel_record_locked(name);
    if (k == NULL) return;
    k->calls++;
    k->ns += ns;
    for (uint32_t i = 0; i < k->nlines; i++)
        if (k->lines[i].line == line) {
            k->lines[i].calls++;
            k->lines[i].ns += ns;
            return;
        }
    HL_ASSERT(k->nlines <= HL_CUPTI_KERNEL_LINES);
    if (k->nlines < HL_CUPTI_KERNEL_LINES) {
        k->lines[k->nlines++] = (hl_cupti_kernel_line){line, 1, ns};
    } else {
        k->other_lines_calls++;
        k->other_lines_ns += ns;
    }
}

/* The line that launched the operation with this correlation id, or HL_NO_LINE. found: whether
 * the launch was seen at all. */
static uint32_t launching_line_locked(uint32_t correlation, int *found) {
    HL_ASSERT_ENGINE_LOCKED();
    HL_ASSERT(cupti.ring != NULL);
    ring_slot *s = &cupti.ring[correlation & (RING_SIZE - 1)];
    *found = correlation != 0 && s->correlation == correlation;
    return *found ? s->line : HL_NO_LINE;
}

static void charge_record_locked(const uint8_t *record) {
    HL_ASSERT_ENGINE_LOCKED();
    uint32_t kind = hl_load_u32(record, HL_REC_KIND);
    uint64_t start, end, correlation;
    int found;
    if (kind == HL_CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
        start = hl_load_u64(record, HL_KERNEL_START);
        end = hl_load_u64(record, HL_KERNEL_END);
        correlation = hl_load_u32(record, HL_KERNEL_CORRELATION);
    } else if (kind == HL_CUPTI_ACTIVITY_KIND_MEMCPY || kind == HL_CUPTI_ACTIVITY_KIND_MEMSET) {
        start = hl_load_u64(record, HL_COPY_START);
        end = hl_load_u64(record, HL_COPY_END);
        correlation = hl_load_u32(record, HL_COPY_CORRELATION);
    } else {
        return;
    }
    uint64_t ns = end > start ? end - start : 0; /* both 0: CUPTI could not time it */
    uint32_t line = launching_line_locked((uint32_t)correlation, &found);
    hl_cupti_line *l = line_record_locked(line);
    cupti.r.records++;
    if (l == NULL) {
        cupti.r.unmatched_ns += ns;
        cupti.r.unmatched_records++;
    } else {
        l->gpu_ns += ns;
    }
    if (kind == HL_CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
        const char *name = hl_load_pointer(record, HL_KERNEL_NAME);
        charge_kernel_locked(name, line, ns);
    } else if (kind == HL_CUPTI_ACTIVITY_KIND_MEMCPY && l != NULL) {
        uint8_t copy_kind = record[HL_COPY_KIND];
        uint64_t bytes = hl_load_u64(record, HL_COPY_BYTES);
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
    if (__atomic_load_n(&cupti.active, __ATOMIC_RELAXED) && cupti.ring != NULL) {
        void *record = NULL;
        while (valid_size > 0 &&
               cupti.cuptiActivityGetNextRecord(buffer, valid_size, &record) == HL_CUPTI_SUCCESS)
            charge_record_locked(record);
        size_t dropped = 0;
        if (cupti.cuptiActivityGetNumDroppedRecords != NULL &&
            cupti.cuptiActivityGetNumDroppedRecords(context, stream, &dropped) == HL_CUPTI_SUCCESS)
            cupti.r.dropped_records += dropped;
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

static void alloc_changed_locked(int64_t delta, uint32_t line) {
    HL_ASSERT_ENGINE_LOCKED();
    cupti.r.alloc_live += delta;
    if (cupti.r.alloc_live > cupti.r.alloc_peak) {
        cupti.r.alloc_peak = cupti.r.alloc_live;
        cupti.r.alloc_peak_t_ns = hl_now_ns() - cupti.start_ns;
        cupti.r.alloc_peak_line = line;
    }
}

static void record_alloc_locked(uint64_t address, uint64_t bytes, uint32_t line) {
    HL_ASSERT_ENGINE_LOCKED();
    hl_cupti_line *l = line_record_locked(line);
    if (l != NULL) l->alloc += bytes;
    if (HL_ARRAY_RESERVE(cupti.allocs, cupti.allocs_capacity, cupti.nallocs + 1, 64) != 0) return;
    cupti.allocs[cupti.nallocs++] = (live_alloc){address, bytes, line};
    alloc_changed_locked((int64_t)bytes, line);
}

static void record_free_locked(uint64_t address) {
    HL_ASSERT_ENGINE_LOCKED();
    for (size_t i = cupti.nallocs; i-- > 0;) /* device allocations are few (caching allocators) */
        if (cupti.allocs[i].address == address) {
            alloc_changed_locked(-(int64_t)cupti.allocs[i].bytes, HL_NO_LINE);
            cupti.allocs[i] = cupti.allocs[--cupti.nallocs];
            return;
        }
}

static void api_callback(void *userdata, int domain, uint32_t cbid, const void *cbdata) {
    (void)userdata;
    if (domain != HL_CUPTI_CB_DOMAIN_DRIVER_API ||
        !__atomic_load_n(&cupti.active, __ATOMIC_RELAXED))
        return;
    const uint8_t *data = cbdata;
    int op = cbid < CBID_TABLE ? __atomic_load_n(&cbid_class[cbid], __ATOMIC_RELAXED) : OP_UNKNOWN;
    if (op == OP_UNKNOWN) {
        const char *name = hl_load_pointer(data, HL_CB_FUNCTION_NAME);
        op = classify(name);
        if (cbid < CBID_TABLE) __atomic_store_n(&cbid_class[cbid], (uint8_t)op, __ATOMIC_RELAXED);
    }
    if (op == OP_NONE) return;
    uint32_t site = hl_load_u32(data, HL_CB_SITE);
    const uint8_t *params = hl_load_pointer(data, HL_CB_PARAMS);
    if (op == OP_LAUNCH || op == OP_COPY || op == OP_MEMSET) {
        if (site != HL_CUPTI_API_ENTER) return;
        uint32_t correlation = hl_load_u32(data, HL_CB_CORRELATION_ID);
        hl_engine_lock();
        if (cupti.active && cupti.ring != NULL) {
            uint32_t line = hl_engine_current_line_locked();
            cupti.ring[correlation & (RING_SIZE - 1)] = (ring_slot){correlation, line};
            hl_cupti_line *l = line_record_locked(line);
            if (l != NULL) l->launches++;
        }
        hl_engine_unlock();
        return;
    }
    if (site != HL_CUPTI_API_EXIT || params == NULL) return;
    const int *result = hl_load_pointer(data, HL_CB_RETURN_VALUE);
    if (result != NULL && *result != 0) return; /* the call failed: nothing changed */
    hl_engine_lock();
    if (cupti.active) {
        if (op == OP_FREE) {
            record_free_locked(hl_load_u64(params, HL_PARAM_FREE_DPTR));
        } else {
            const uint64_t *dptr = hl_load_pointer(params, HL_PARAM_ALLOC_DPTR);
            uint64_t bytes = hl_load_u64(params, HL_PARAM_ALLOC_BYTES);
            if (op == OP_ALLOC_PITCH) {
                const size_t *pitch = hl_load_pointer(params, HL_PARAM_PITCH_PITCH);
                bytes = pitch ? *pitch * hl_load_u64(params, HL_PARAM_PITCH_HEIGHT) : 0;
            }
            if (dptr != NULL) record_alloc_locked(*dptr, bytes, hl_engine_current_line_locked());
        }
    }
    hl_engine_unlock();
}

/* ---- CUPTI start and stop ---------------------------------------------------------------- */

static const int activity_kinds[] = {HL_CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                     HL_CUPTI_ACTIVITY_KIND_MEMCPY, HL_CUPTI_ACTIVITY_KIND_MEMSET};
#define NKINDS (sizeof(activity_kinds) / sizeof(activity_kinds[0]))

/* The warning for a failed CUPTI call, in why. Returns -1. */
static int call_failed(const char *what, hl_CUptiResult rc, char *why, size_t size) {
    char detail[160];
    const char *text = NULL;
    hl_cuptiGetResultString_fn describe =
        HL_GPU_RESOLVE(cupti.lib, hl_cuptiGetResultString_fn, cuptiGetResultString);
    if (describe == NULL || describe(rc, &text) != HL_CUPTI_SUCCESS || text == NULL) text = "error";
    snprintf(detail, sizeof(detail), "%s failed: %s (%d)", what, text, rc);
    snprintf(why, size, "GPU kernel tracing is off: CUPTI %s; per-line GPU time is not measured",
             detail);
    return -1;
}

int hl_cupti_start(void *lib, uint64_t start_ns, char *why, size_t size) {
    cupti.lib = lib;
    cupti.start_ns = start_ns;
    hl_cuptiSubscribe_fn subscribe = HL_GPU_RESOLVE(lib, hl_cuptiSubscribe_fn, cuptiSubscribe);
    hl_cuptiActivityEnable_fn enable =
        HL_GPU_RESOLVE(lib, hl_cuptiActivityEnable_fn, cuptiActivityEnable);
    hl_cuptiActivityRegisterCallbacks_fn register_buffers =
        HL_GPU_RESOLVE(lib, hl_cuptiActivityRegisterCallbacks_fn, cuptiActivityRegisterCallbacks);
    cupti.cuptiUnsubscribe = HL_GPU_RESOLVE(lib, hl_cuptiUnsubscribe_fn, cuptiUnsubscribe);
    cupti.cuptiEnableDomain = HL_GPU_RESOLVE(lib, hl_cuptiEnableDomain_fn, cuptiEnableDomain);
    cupti.cuptiActivityDisable =
        HL_GPU_RESOLVE(lib, hl_cuptiActivityDisable_fn, cuptiActivityDisable);
    cupti.cuptiActivityFlushAll =
        HL_GPU_RESOLVE(lib, hl_cuptiActivityFlushAll_fn, cuptiActivityFlushAll);
    cupti.cuptiActivityGetNextRecord =
        HL_GPU_RESOLVE(lib, hl_cuptiActivityGetNextRecord_fn, cuptiActivityGetNextRecord);
    cupti.cuptiActivityGetNumDroppedRecords = HL_GPU_RESOLVE(
        lib, hl_cuptiActivityGetNumDroppedRecords_fn, cuptiActivityGetNumDroppedRecords);
    if (subscribe == NULL || enable == NULL || register_buffers == NULL ||
        cupti.cuptiUnsubscribe == NULL || cupti.cuptiEnableDomain == NULL ||
        cupti.cuptiActivityDisable == NULL || cupti.cuptiActivityFlushAll == NULL ||
        cupti.cuptiActivityGetNextRecord == NULL) {
        snprintf(why, size, "GPU kernel tracing is off: %s lacks functions heatline needs",
                 "the CUPTI library");
        return -1;
    }
    cupti.ring = calloc(RING_SIZE, sizeof(*cupti.ring));
    if (cupti.ring == NULL) {
        snprintf(why, size, "GPU kernel tracing is off: %s", "out of memory");
        return -1;
    }
    hl_CUptiResult rc = subscribe(&cupti.subscriber, api_callback, NULL);
    if (rc == HL_CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
        snprintf(why, size,
                 "GPU kernel tracing is off: CUPTI is in use by another profiler (%s); only "
                 "device utilisation and memory are reported",
                 "torch.profiler, Nsight or similar");
        goto fail;
    }
    if (rc != HL_CUPTI_SUCCESS) {
        call_failed("cuptiSubscribe", rc, why, size);
        goto fail;
    }
    __atomic_store_n(&cupti.active, 1, __ATOMIC_RELAXED);
    if ((rc = register_buffers(buffer_requested, buffer_completed)) != HL_CUPTI_SUCCESS) {
        call_failed("cuptiActivityRegisterCallbacks", rc, why, size);
        goto fail_subscribed;
    }
    if ((rc = cupti.cuptiEnableDomain(1, cupti.subscriber, HL_CUPTI_CB_DOMAIN_DRIVER_API)) !=
        HL_CUPTI_SUCCESS) {
        call_failed("cuptiEnableDomain", rc, why, size);
        goto fail_subscribed;
    }
    for (size_t i = 0; i < NKINDS; i++)
        if ((rc = enable(activity_kinds[i])) != HL_CUPTI_SUCCESS) {
            call_failed("cuptiActivityEnable", rc, why, size);
            for (size_t j = 0; j < i; j++) (void)cupti.cuptiActivityDisable(activity_kinds[j]);
            (void)cupti.cuptiEnableDomain(0, cupti.subscriber, HL_CUPTI_CB_DOMAIN_DRIVER_API);
            goto fail_subscribed;
        }
    return 0;

fail_subscribed:
    __atomic_store_n(&cupti.active, 0, __ATOMIC_RELAXED);
    (void)cupti.cuptiUnsubscribe(cupti.subscriber);
fail:
    free(cupti.ring);
    cupti.ring = NULL;
    return -1;
}

void hl_cupti_stop(void) {
    HL_ASSERT(!hl_engine_lock_held()); /* a flush completes buffers, whose callback takes it */
    if (!__atomic_load_n(&cupti.active, __ATOMIC_RELAXED)) return;
    (void)cupti.cuptiActivityFlushAll(HL_CUPTI_ACTIVITY_FLAG_FLUSH_FORCED); /* completes buffers */
    for (size_t i = 0; i < NKINDS; i++) (void)cupti.cuptiActivityDisable(activity_kinds[i]);
    (void)cupti.cuptiEnableDomain(0, cupti.subscriber, HL_CUPTI_CB_DOMAIN_DRIVER_API);
    (void)cupti.cuptiActivityFlushAll(HL_CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    (void)cupti.cuptiUnsubscribe(cupti.subscriber);
}

void hl_cupti_release_locked(void) {
    HL_ASSERT_ENGINE_LOCKED();
    __atomic_store_n(&cupti.active, 0, __ATOMIC_RELAXED);
    free(cupti.ring);
    cupti.ring = NULL;
}

void hl_cupti_reset_locked(void) {
    HL_ASSERT_ENGINE_LOCKED();
    free(cupti.r.lines);
    for (size_t i = 0; i < cupti.r.nkernels; i++) {
        free(cupti.r.kernels[i].name);
        free(cupti.r.kernels[i].demangled);
    }
    free(cupti.r.kernels);
    free(cupti.allocs);
    cupti.allocs = NULL;
    cupti.nallocs = cupti.allocs_capacity = 0;
    cupti.kernels_capacity = 0;
    memset(&cupti.r, 0, sizeof(cupti.r));
    cupti.r.alloc_peak_line = HL_NO_LINE;
}

void hl_cupti_after_fork_child(void) {
    /* Memory is not freed: another thread of the parent may have been using it at the moment of
     * the fork. */
    __atomic_store_n(&cupti.active, 0, __ATOMIC_RELAXED);
    cupti.ring = NULL;
}
