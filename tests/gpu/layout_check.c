/* layout_check.c: compiled by test_gpu_engine.py against NVIDIA's real CUPTI and CUDA headers
 * (where installed) together with heatline's own declarations (gpu_abi.h): every offset and
 * constant heatline hard-codes must equal the header's, or this fails to compile. */
#include <stddef.h>

#include <cupti.h>

#include "gpu_abi.h"

#define SAME(a, b) _Static_assert((a) == (b), #a " != " #b)

SAME(HL_CUPTI_ERROR_MAX_LIMIT_REACHED, CUPTI_ERROR_MAX_LIMIT_REACHED);
SAME(HL_CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED,
     CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
SAME(HL_CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_CB_DOMAIN_DRIVER_API);
SAME(HL_CUPTI_API_ENTER, CUPTI_API_ENTER);
SAME(HL_CUPTI_API_EXIT, CUPTI_API_EXIT);
SAME(HL_CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMCPY);
SAME(HL_CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_MEMSET);
SAME(HL_CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
SAME(HL_CUPTI_ACTIVITY_FLAG_FLUSH_FORCED, CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
SAME(HL_CUPTI_MEMCPY_HTOD, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD);
SAME(HL_CUPTI_MEMCPY_DTOH, CUPTI_ACTIVITY_MEMCPY_KIND_DTOH);
SAME(HL_CUPTI_MEMCPY_HTOA, CUPTI_ACTIVITY_MEMCPY_KIND_HTOA);
SAME(HL_CUPTI_MEMCPY_ATOH, CUPTI_ACTIVITY_MEMCPY_KIND_ATOH);

SAME(HL_CB_SITE, offsetof(CUpti_CallbackData, callbackSite));
SAME(HL_CB_FUNCTION_NAME, offsetof(CUpti_CallbackData, functionName));
SAME(HL_CB_PARAMS, offsetof(CUpti_CallbackData, functionParams));
SAME(HL_CB_RETURN_VALUE, offsetof(CUpti_CallbackData, functionReturnValue));
SAME(HL_CB_CORRELATION_ID, offsetof(CUpti_CallbackData, correlationId));
_Static_assert(HL_CB_SIZE >= sizeof(CUpti_CallbackData), "callback data size");

SAME(HL_PARAM_ALLOC_DPTR, offsetof(cuMemAlloc_v2_params, dptr));
SAME(HL_PARAM_ALLOC_BYTES, offsetof(cuMemAlloc_v2_params, bytesize));
SAME(HL_PARAM_ALLOC_BYTES, offsetof(cuMemAllocManaged_params, bytesize));
SAME(HL_PARAM_ALLOC_BYTES, offsetof(cuMemAllocAsync_params, bytesize));
SAME(HL_PARAM_ALLOC_BYTES, offsetof(cuMemAllocFromPoolAsync_params, bytesize));
SAME(HL_PARAM_PITCH_PITCH, offsetof(cuMemAllocPitch_v2_params, pPitch));
SAME(HL_PARAM_PITCH_HEIGHT, offsetof(cuMemAllocPitch_v2_params, Height));
SAME(HL_PARAM_FREE_DPTR, offsetof(cuMemFree_v2_params, dptr));
SAME(HL_PARAM_FREE_DPTR, offsetof(cuMemFreeAsync_params, dptr));

/* The kernel record prefix is the same in every version CUPTI 12 and 13 fill. */
#if CUPTI_API_VERSION >= 130000
typedef CUpti_ActivityKernel10 Kernel; /* what CUPTI 13 fills */
#else
typedef CUpti_ActivityKernel9 Kernel; /* what CUPTI 12 fills */
#endif
SAME(HL_KERNEL_START, offsetof(CUpti_ActivityKernel4, start));
SAME(HL_KERNEL_END, offsetof(CUpti_ActivityKernel4, end));
SAME(HL_KERNEL_DEVICE, offsetof(CUpti_ActivityKernel4, deviceId));
SAME(HL_KERNEL_CORRELATION, offsetof(CUpti_ActivityKernel4, correlationId));
SAME(HL_KERNEL_NAME, offsetof(CUpti_ActivityKernel4, name));
SAME(HL_KERNEL_START, offsetof(Kernel, start));
SAME(HL_KERNEL_END, offsetof(Kernel, end));
SAME(HL_KERNEL_DEVICE, offsetof(Kernel, deviceId));
SAME(HL_KERNEL_CORRELATION, offsetof(Kernel, correlationId));
SAME(HL_KERNEL_NAME, offsetof(Kernel, name));
SAME(HL_COPY_KIND, offsetof(CUpti_ActivityMemcpy6, copyKind));
SAME(HL_COPY_BYTES, offsetof(CUpti_ActivityMemcpy6, bytes));
SAME(HL_COPY_START, offsetof(CUpti_ActivityMemcpy6, start));
SAME(HL_COPY_END, offsetof(CUpti_ActivityMemcpy6, end));
SAME(HL_COPY_DEVICE, offsetof(CUpti_ActivityMemcpy6, deviceId));
SAME(HL_COPY_CORRELATION, offsetof(CUpti_ActivityMemcpy6, correlationId));
SAME(HL_COPY_BYTES, offsetof(CUpti_ActivityMemset4, bytes));
SAME(HL_COPY_START, offsetof(CUpti_ActivityMemset4, start));
SAME(HL_COPY_END, offsetof(CUpti_ActivityMemset4, end));
SAME(HL_COPY_DEVICE, offsetof(CUpti_ActivityMemset4, deviceId));
SAME(HL_COPY_CORRELATION, offsetof(CUpti_ActivityMemset4, correlationId));
