/* gpu_abi.h: the few NVML and CUPTI declarations the GPU part of the engine uses (nvml.c,
 * cupti.c), written from NVIDIA's public API documentation so that heatline builds with no CUDA
 * headers and no CUDA library at build time (the libraries are loaded with dlopen at start; see
 * gpu.c).
 *
 * Only what is used is declared. Activity records are read by byte offset, not through structs:
 * CUPTI fills the newest version of each record its own release knows (CUpti_ActivityKernel9 in
 * CUDA 12, Kernel10 in 13.0, ...), and new versions only append fields, so the offsets of the
 * fields read here are the same in every version. tests/gpu/layout_check.c compares every
 * offset and constant below with the real headers where they are installed.
 *
 * Also included by the fake libraries in tests/gpu/, which must produce the same layouts.
 */
#ifndef HEATLINE_GPU_ABI_H
#define HEATLINE_GPU_ABI_H

#include <stddef.h>
#include <stdint.h>

/* A function declared below, bound from a dlopen handle (<dlfcn.h>): NULL when lib lacks it. */
#define HL_GPU_RESOLVE(lib, type, symbol) ((type)dlsym(lib, #symbol))

/* ---- NVML (libnvidia-ml.so.1) ------------------------------------------------------------ */

typedef int hl_nvmlReturn_t;       /* nvmlReturn_t: 0 is NVML_SUCCESS */
typedef struct hl_nvmlDevice_st *hl_nvmlDevice_t;

typedef struct hl_nvmlUtilization {
    unsigned int gpu;    /* % of the last sample period in which a kernel was running */
    unsigned int memory; /* % of it in which device memory was read or written */
} hl_nvmlUtilization_t;

typedef struct hl_nvmlMemory {
    unsigned long long total, free, used; /* bytes, device-wide */
} hl_nvmlMemory_t;

#define HL_NVML_SUCCESS 0
#define HL_NVML_DEVICE_NAME_BUFFER_SIZE 96

typedef hl_nvmlReturn_t (*hl_nvmlInit_v2_fn)(void);
typedef hl_nvmlReturn_t (*hl_nvmlShutdown_fn)(void);
typedef hl_nvmlReturn_t (*hl_nvmlDeviceGetCount_v2_fn)(unsigned int *count);
typedef hl_nvmlReturn_t (*hl_nvmlDeviceGetHandleByIndex_v2_fn)(unsigned int index,
                                                               hl_nvmlDevice_t *device);
typedef hl_nvmlReturn_t (*hl_nvmlDeviceGetUtilizationRates_fn)(hl_nvmlDevice_t device,
                                                               hl_nvmlUtilization_t *utilization);
typedef hl_nvmlReturn_t (*hl_nvmlDeviceGetMemoryInfo_fn)(hl_nvmlDevice_t device,
                                                         hl_nvmlMemory_t *memory);
typedef hl_nvmlReturn_t (*hl_nvmlDeviceGetName_fn)(hl_nvmlDevice_t device, char *name,
                                                   unsigned int length);

/* ---- CUPTI (libcupti.so) ------------------------------------------------------------------ */

typedef int hl_CUptiResult; /* 0 is CUPTI_SUCCESS */
typedef struct hl_CUpti_Subscriber_st *hl_CUpti_SubscriberHandle;
typedef void *hl_CUcontext;

#define HL_CUPTI_SUCCESS 0
#define HL_CUPTI_ERROR_MAX_LIMIT_REACHED 12
#define HL_CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED 39

#define HL_CUPTI_CB_DOMAIN_DRIVER_API 1
#define HL_CUPTI_API_ENTER 0
#define HL_CUPTI_API_EXIT 1

#define HL_CUPTI_ACTIVITY_KIND_MEMCPY 1
#define HL_CUPTI_ACTIVITY_KIND_MEMSET 2
#define HL_CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL 10 /* KERNEL (3) would serialise kernels */
#define HL_CUPTI_ACTIVITY_FLAG_FLUSH_FORCED 1

/* CUpti_ActivityMemcpyKind values for the two directions reported separately. */
#define HL_CUPTI_MEMCPY_HTOD 1
#define HL_CUPTI_MEMCPY_DTOH 2
#define HL_CUPTI_MEMCPY_HTOA 3
#define HL_CUPTI_MEMCPY_ATOH 4

/* CUpti_CallbackData (natural alignment, not packed): the fields read, by offset. */
#define HL_CB_SITE 0            /* uint32: HL_CUPTI_API_ENTER or EXIT */
#define HL_CB_FUNCTION_NAME 8   /* const char *: e.g. "cuLaunchKernel" */
#define HL_CB_PARAMS 16         /* const void *: the call's parameter struct */
#define HL_CB_RETURN_VALUE 24   /* void *: points at the call's CUresult (at EXIT) */
#define HL_CB_CORRELATION_ID 64 /* uint32: equals the activity records' correlationId */
#define HL_CB_SIZE 72

/* Parameter structs of the allocation calls (cuMemAlloc_v2_params, ...): where the size is. */
#define HL_PARAM_ALLOC_DPTR 0       /* CUdeviceptr *: where the call stores the address */
#define HL_PARAM_ALLOC_BYTES 8      /* size_t: cuMemAlloc_v2, Managed, Async, FromPoolAsync */
#define HL_PARAM_PITCH_PITCH 8      /* size_t *: cuMemAllocPitch_v2's pitch, set by the call */
#define HL_PARAM_PITCH_HEIGHT 24    /* size_t: its height in rows */
#define HL_PARAM_FREE_DPTR 0        /* CUdeviceptr: cuMemFree_v2, cuMemFreeAsync */

/* Activity records (packed, 8-byte aligned; every record starts with its uint32 kind). */
#define HL_REC_KIND 0
/* CONCURRENT_KERNEL: CUpti_ActivityKernel4 ... Kernel10 share this prefix. */
#define HL_KERNEL_START 16          /* uint64 ns */
#define HL_KERNEL_END 24            /* uint64 ns */
#define HL_KERNEL_DEVICE 40         /* uint32 */
#define HL_KERNEL_CORRELATION 92    /* uint32 */
#define HL_KERNEL_NAME 104          /* const char *, owned by CUPTI */
#define HL_KERNEL_MIN_SIZE 112
/* MEMCPY (CUpti_ActivityMemcpy5/6) and MEMSET (CUpti_ActivityMemset4) share these. */
#define HL_COPY_KIND 4              /* uint8 CUpti_ActivityMemcpyKind (memcpy only) */
#define HL_COPY_BYTES 8             /* uint64 */
#define HL_COPY_START 16            /* uint64 ns */
#define HL_COPY_END 24              /* uint64 ns */
#define HL_COPY_DEVICE 32           /* uint32 */
#define HL_COPY_CORRELATION 44      /* uint32 */
#define HL_COPY_MIN_SIZE 48

typedef void (*hl_CUpti_CallbackFunc)(void *userdata, int domain, uint32_t cbid,
                                      const void *cbdata);
typedef void (*hl_CUpti_BuffersCallbackRequestFunc)(uint8_t **buffer, size_t *size,
                                                    size_t *max_records);
typedef void (*hl_CUpti_BuffersCallbackCompleteFunc)(hl_CUcontext context, uint32_t stream,
                                                     uint8_t *buffer, size_t size,
                                                     size_t valid_size);

typedef hl_CUptiResult (*hl_cuptiSubscribe_fn)(hl_CUpti_SubscriberHandle *subscriber,
                                               hl_CUpti_CallbackFunc callback, void *userdata);
typedef hl_CUptiResult (*hl_cuptiUnsubscribe_fn)(hl_CUpti_SubscriberHandle subscriber);
typedef hl_CUptiResult (*hl_cuptiEnableDomain_fn)(uint32_t enable,
                                                  hl_CUpti_SubscriberHandle subscriber, int domain);
typedef hl_CUptiResult (*hl_cuptiActivityEnable_fn)(int kind);
typedef hl_CUptiResult (*hl_cuptiActivityDisable_fn)(int kind);
typedef hl_CUptiResult (*hl_cuptiActivityRegisterCallbacks_fn)(
    hl_CUpti_BuffersCallbackRequestFunc requested, hl_CUpti_BuffersCallbackCompleteFunc completed);
typedef hl_CUptiResult (*hl_cuptiActivityFlushAll_fn)(uint32_t flag);
typedef hl_CUptiResult (*hl_cuptiActivityGetNextRecord_fn)(uint8_t *buffer, size_t valid_size,
                                                           void **record);
typedef hl_CUptiResult (*hl_cuptiActivityGetNumDroppedRecords_fn)(hl_CUcontext context,
                                                                  uint32_t stream, size_t *dropped);
typedef hl_CUptiResult (*hl_cuptiGetResultString_fn)(hl_CUptiResult result, const char **text);

#endif
