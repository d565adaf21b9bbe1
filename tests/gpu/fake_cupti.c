/* fake_cupti.c: a stand-in for libcupti.so for the tests (no GPU, no driver needed).
 *
 * The test program "launches" work through fake_launch(), fake_memcpy(), fake_memset(),
 * fake_alloc() and fake_free() (through ctypes). Each call does what the CUDA driver and CUPTI
 * do for a real one: the subscriber's driver-API callback is called at the API's entry and exit,
 * on the calling thread, with a fresh correlation id; for kernels, copies and memsets an activity
 * record with that correlation id and the given duration (and bytes) is queued. Queued records
 * are handed to the subscriber's buffer callbacks, in buffers it provides, by
 * cuptiActivityFlushAll() or by fake_deliver(in_thread) (in_thread: from a separate pthread, as
 * CUPTI's own worker thread does). FAKE_CUPTI_TAKEN=1 in the environment makes cuptiSubscribe
 * fail as it does when another profiler holds CUPTI.
 * Build: gcc -shared -fPIC -pthread -I src/heatline/_native -o fake_cupti.so tests/gpu/fake_cupti.c
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_abi.h"

#define KERNEL_RECORD 200 /* sizes of the records as CUPTI 12/13 lays them out (rounded to 8) */
#define COPY_RECORD 80
#define SET_RECORD 72

struct hl_CUpti_Subscriber_st {
    int unused;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct hl_CUpti_Subscriber_st the_subscriber;
static hl_CUpti_CallbackFunc callback;
static void *callback_data;
static int subscribed, driver_domain;
static int kinds[64];
static hl_CUpti_BuffersCallbackRequestFunc requested;
static hl_CUpti_BuffersCallbackCompleteFunc completed;
static uint32_t next_correlation;
static uint64_t clock_ns = 1000000;
static uint64_t next_address = 0x7f0000000000ull;

static uint8_t *pending; /* queued records, back to back */
static size_t pending_bytes, pending_capacity;

static char *names[256]; /* kernel names handed out; kept for the life of the process */
static int nnames;

/* ---- the CUPTI API ---- */

hl_CUptiResult cuptiSubscribe(hl_CUpti_SubscriberHandle *s, hl_CUpti_CallbackFunc f, void *data) {
    const char *taken = getenv("FAKE_CUPTI_TAKEN");
    if (taken != NULL && taken[0] == '1') return HL_CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    pthread_mutex_lock(&lock);
    if (subscribed) {
        pthread_mutex_unlock(&lock);
        return HL_CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    }
    subscribed = 1;
    callback = f;
    callback_data = data;
    *s = &the_subscriber;
    pthread_mutex_unlock(&lock);
    return HL_CUPTI_SUCCESS;
}

hl_CUptiResult cuptiUnsubscribe(hl_CUpti_SubscriberHandle s) {
    if (s != &the_subscriber || !subscribed) return 1; /* CUPTI_ERROR_INVALID_PARAMETER */
    pthread_mutex_lock(&lock);
    subscribed = driver_domain = 0;
    callback = NULL;
    pthread_mutex_unlock(&lock);
    return HL_CUPTI_SUCCESS;
}

hl_CUptiResult cuptiEnableDomain(uint32_t enable, hl_CUpti_SubscriberHandle s, int domain) {
    if (s != &the_subscriber || !subscribed) return 1;
    if (domain == HL_CUPTI_CB_DOMAIN_DRIVER_API) driver_domain = enable != 0;
    return HL_CUPTI_SUCCESS;
}

hl_CUptiResult cuptiActivityEnable(int kind) {
    if (kind < 0 || kind >= 64) return 1;
    kinds[kind] = 1;
    return HL_CUPTI_SUCCESS;
}

hl_CUptiResult cuptiActivityDisable(int kind) {
    if (kind < 0 || kind >= 64) return 1;
    kinds[kind] = 0;
    return HL_CUPTI_SUCCESS;
}

hl_CUptiResult cuptiActivityRegisterCallbacks(hl_CUpti_BuffersCallbackRequestFunc r,
                                              hl_CUpti_BuffersCallbackCompleteFunc c) {
    requested = r;
    completed = c;
    return HL_CUPTI_SUCCESS;
}

static size_t record_size(const uint8_t *record) {
    uint32_t kind;
    memcpy(&kind, record, sizeof(kind));
    return kind == HL_CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL ? KERNEL_RECORD
           : kind == HL_CUPTI_ACTIVITY_KIND_MEMCPY          ? COPY_RECORD
                                                            : SET_RECORD;
}

hl_CUptiResult cuptiActivityGetNextRecord(uint8_t *buffer, size_t valid, void **record) {
    uint8_t *next = *record == NULL ? buffer : (uint8_t *)*record + record_size(*record);
    if (next >= buffer + valid) return HL_CUPTI_ERROR_MAX_LIMIT_REACHED;
    *record = next;
    return HL_CUPTI_SUCCESS;
}

hl_CUptiResult cuptiActivityGetNumDroppedRecords(hl_CUcontext c, uint32_t stream, size_t *dropped) {
    (void)c;
    (void)stream;
    *dropped = 0;
    return HL_CUPTI_SUCCESS;
}

hl_CUptiResult cuptiGetResultString(hl_CUptiResult result, const char **text) {
    *text = result == HL_CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
                ? "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"
                : "fake CUPTI error";
    return HL_CUPTI_SUCCESS;
}

/* Hands every queued record to the subscriber, in buffers it provides (small ones are fine: a
 * record never spans two buffers). */
static void deliver(void) {
    pthread_mutex_lock(&lock);
    uint8_t *records = pending;
    size_t bytes = pending_bytes;
    pending = NULL;
    pending_bytes = pending_capacity = 0;
    hl_CUpti_BuffersCallbackRequestFunc r = requested;
    hl_CUpti_BuffersCallbackCompleteFunc c = completed;
    pthread_mutex_unlock(&lock);
    size_t at = 0;
    while (at < bytes && r != NULL && c != NULL) {
        uint8_t *buffer = NULL;
        size_t size = 0, max_records = 0, used = 0;
        r(&buffer, &size, &max_records);
        if (buffer == NULL) break; /* the client refused: the records are dropped */
        while (at < bytes && used + record_size(records + at) <= size) {
            size_t n = record_size(records + at);
            memcpy(buffer + used, records + at, n);
            used += n;
            at += n;
        }
        c(NULL, 0, buffer, size, used);
        if (used == 0) break;
    }
    free(records);
}

hl_CUptiResult cuptiActivityFlushAll(uint32_t flag) {
    (void)flag;
    deliver();
    return HL_CUPTI_SUCCESS;
}

/* ---- the test program's API ---- */

static void *deliver_thread(void *unused) {
    (void)unused;
    deliver();
    return NULL;
}

void fake_deliver(int in_thread) {
    pthread_t t;
    if (in_thread && pthread_create(&t, NULL, deliver_thread, NULL) == 0) pthread_join(t, NULL);
    else deliver();
}

static void queue(const uint8_t *record, size_t size) {
    pthread_mutex_lock(&lock);
    if (pending_bytes + size > pending_capacity) {
        size_t grown = pending_capacity ? pending_capacity * 2 : 4096;
        uint8_t *p = realloc(pending, grown);
        if (p == NULL) {
            pthread_mutex_unlock(&lock);
            return;
        }
        pending = p;
        pending_capacity = grown;
    }
    memcpy(pending + pending_bytes, record, size);
    pending_bytes += size;
    pthread_mutex_unlock(&lock);
}

/* Calls the subscriber at the API's entry and exit, as the driver does; returns the id. */
static uint32_t api_call(uint32_t cbid, const char *function, void *params, int *result) {
    uint8_t data[HL_CB_SIZE];
    uint32_t correlation = __atomic_add_fetch(&next_correlation, 1, __ATOMIC_ACQ_REL);
    memset(data, 0, sizeof(data));
    memcpy(data + HL_CB_FUNCTION_NAME, &function, sizeof(function));
    memcpy(data + HL_CB_PARAMS, &params, sizeof(params));
    memcpy(data + HL_CB_RETURN_VALUE, &result, sizeof(result));
    memcpy(data + HL_CB_CORRELATION_ID, &correlation, sizeof(correlation));
    hl_CUpti_CallbackFunc f = callback;
    if (f == NULL || !driver_domain) return correlation;
    uint32_t site = HL_CUPTI_API_ENTER;
    memcpy(data + HL_CB_SITE, &site, sizeof(site));
    f(callback_data, HL_CUPTI_CB_DOMAIN_DRIVER_API, cbid, data);
    site = HL_CUPTI_API_EXIT;
    memcpy(data + HL_CB_SITE, &site, sizeof(site));
    f(callback_data, HL_CUPTI_CB_DOMAIN_DRIVER_API, cbid, data);
    return correlation;
}

static void put_times(uint8_t *record, size_t start_at, uint64_t duration_ns) {
    uint64_t start = __atomic_fetch_add(&clock_ns, duration_ns + 1000, __ATOMIC_ACQ_REL);
    uint64_t end = start + duration_ns;
    memcpy(record + start_at, &start, sizeof(start));
    memcpy(record + start_at + 8, &end, sizeof(end));
}

static const char *kernel_name(const char *name) {
    pthread_mutex_lock(&lock);
    for (int i = 0; i < nnames; i++)
        if (strcmp(names[i], name) == 0) {
            pthread_mutex_unlock(&lock);
            return names[i];
        }
    const char *kept = nnames < 256 ? (names[nnames++] = strdup(name)) : "(too many names)";
    pthread_mutex_unlock(&lock);
    return kept;
}

void fake_launch(const char *kernel, uint64_t duration_ns) {
    int result = 0;
    uint8_t params[64] = {0};
    uint32_t correlation = api_call(307, "cuLaunchKernel", params, &result);
    if (!kinds[HL_CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL]) return;
    uint8_t record[KERNEL_RECORD] = {0};
    uint32_t kind = HL_CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, device = 0;
    const char *name = kernel_name(kernel);
    memcpy(record + HL_REC_KIND, &kind, sizeof(kind));
    put_times(record, HL_KERNEL_START, duration_ns);
    memcpy(record + HL_KERNEL_DEVICE, &device, sizeof(device));
    memcpy(record + HL_KERNEL_CORRELATION, &correlation, sizeof(correlation));
    memcpy(record + HL_KERNEL_NAME, &name, sizeof(name));
    queue(record, sizeof(record));
}

static void copy_or_set(int kind, uint32_t cbid, const char *function, uint64_t bytes,
                        uint8_t copy_kind, uint64_t duration_ns, size_t size) {
    int result = 0;
    uint8_t params[64] = {0};
    uint32_t correlation = api_call(cbid, function, params, &result);
    if (!kinds[kind]) return;
    uint8_t record[COPY_RECORD] = {0};
    uint32_t k = (uint32_t)kind;
    memcpy(record + HL_REC_KIND, &k, sizeof(k));
    if (kind == HL_CUPTI_ACTIVITY_KIND_MEMCPY) record[HL_COPY_KIND] = copy_kind;
    memcpy(record + HL_COPY_BYTES, &bytes, sizeof(bytes));
    put_times(record, HL_COPY_START, duration_ns);
    memcpy(record + HL_COPY_CORRELATION, &correlation, sizeof(correlation));
    queue(record, size);
}

/* copy_kind: CUpti_ActivityMemcpyKind (1 host to device, 2 device to host, 8 device to device). */
void fake_memcpy(uint64_t bytes, int copy_kind, uint64_t duration_ns) {
    const char *function = copy_kind == HL_CUPTI_MEMCPY_HTOD   ? "cuMemcpyHtoDAsync_v2"
                           : copy_kind == HL_CUPTI_MEMCPY_DTOH ? "cuMemcpyDtoHAsync_v2"
                                                               : "cuMemcpyDtoDAsync_v2";
    uint32_t cbid = copy_kind == HL_CUPTI_MEMCPY_HTOD   ? 279
                    : copy_kind == HL_CUPTI_MEMCPY_DTOH ? 281
                                                        : 283;
    copy_or_set(HL_CUPTI_ACTIVITY_KIND_MEMCPY, cbid, function, bytes, (uint8_t)copy_kind,
                duration_ns, COPY_RECORD);
}

void fake_memset(uint64_t bytes, uint64_t duration_ns) {
    copy_or_set(HL_CUPTI_ACTIVITY_KIND_MEMSET, 311, "cuMemsetD8Async", bytes, 0, duration_ns,
                SET_RECORD);
}

/* cuMemAlloc_v2 of `bytes`: returns the (fake) device address. */
uint64_t fake_alloc(uint64_t bytes) {
    uint64_t address =
        __atomic_fetch_add(&next_address, (bytes + 0xfff) & ~0xfffull, __ATOMIC_ACQ_REL);
    uint64_t out = 0;
    uint8_t params[16];
    uint64_t *dptr = &out;
    memcpy(params + HL_PARAM_ALLOC_DPTR, &dptr, sizeof(dptr));
    memcpy(params + HL_PARAM_ALLOC_BYTES, &bytes, sizeof(bytes));
    int result = 0;
    out = address; /* set before the exit callback, as the driver has by then */
    (void)api_call(2, "cuMemAlloc_v2", params, &result);
    return address;
}

void fake_free(uint64_t address) {
    uint8_t params[8];
    memcpy(params + HL_PARAM_FREE_DPTR, &address, sizeof(address));
    int result = 0;
    (void)api_call(4, "cuMemFree_v2", params, &result);
}

/* A driver call of no interest to the profiler (it must be ignored). */
void fake_other_call(void) {
    int result = 0;
    (void)api_call(17, "cuCtxGetCurrent", NULL, &result);
}
