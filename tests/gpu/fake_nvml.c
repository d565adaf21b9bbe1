/* fake_nvml.c: a stand-in for libnvidia-ml.so.1 for the tests (no GPU needed).
 *
 * Emulates up to 4 devices whose utilisation and memory the test sets through
 * fake_nvml_set(); fake_nvml_queries() counts utilisation reads so a test program can wait for
 * the profiler to have sampled a value. Loaded by heatline through HEATLINE_NVML_LIBRARY.
 *
 * Like the real library, which talks to the driver through descriptors it opens at nvmlInit
 * (/dev/nvidiactl, /dev/nvidiaN), it holds one from its first nvmlInit to its last
 * nvmlShutdown and uses it in every query: a query from a thread whose descriptor table lacks
 * it (heatline's sampler thread has one of its own) fails, and fake_nvml_failures() counts it.
 * Build: gcc -shared -fPIC -I src/heatline/_native -o fake_nvml.so tests/gpu/fake_nvml.c
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpu_abi.h"

#define MAX_DEVICES 4

struct hl_nvmlDevice_st {
    unsigned util, memory_util;
    unsigned long long total, used;
};

static struct hl_nvmlDevice_st devices[MAX_DEVICES];
static unsigned device_count = 1;
static int initialised;
static unsigned long long queries;
static unsigned long long failures;
static int driver_fd = -1; /* the "driver" descriptor, and what it was when opened */
static struct stat driver_id;

/* Whether the calling thread's descriptor table has the driver descriptor. */
static int driver_reachable(void) {
    struct stat now;
    if (driver_fd >= 0 && fstat(driver_fd, &now) == 0 && now.st_dev == driver_id.st_dev &&
        now.st_ino == driver_id.st_ino)
        return 1;
    __atomic_add_fetch(&failures, 1, __ATOMIC_ACQ_REL);
    return 0;
}

/* ---- the control API (called by the tests through ctypes) ---- */

void fake_nvml_set_count(unsigned count) {
    device_count = count <= MAX_DEVICES ? count : MAX_DEVICES;
}

void fake_nvml_set(unsigned index, unsigned util, unsigned long long used,
                   unsigned long long total) {
    if (index >= MAX_DEVICES) return;
    __atomic_store_n(&devices[index].util, util, __ATOMIC_RELEASE);
    __atomic_store_n(&devices[index].used, used, __ATOMIC_RELEASE);
    __atomic_store_n(&devices[index].total, total, __ATOMIC_RELEASE);
}

unsigned long long fake_nvml_queries(void) {
    return __atomic_load_n(&queries, __ATOMIC_ACQUIRE);
}

unsigned long long fake_nvml_failures(void) {
    return __atomic_load_n(&failures, __ATOMIC_ACQUIRE);
}

/* ---- the NVML API ---- */

hl_nvmlReturn_t nvmlInit_v2(void) {
    if (initialised == 0) {
        driver_fd = memfd_create("fake-nvidiactl", MFD_CLOEXEC);
        if (driver_fd < 0 || fstat(driver_fd, &driver_id) != 0) return 999; /* NVML_ERROR_UNKNOWN */
    }
    initialised++;
    return HL_NVML_SUCCESS;
}

hl_nvmlReturn_t nvmlShutdown(void) {
    if (initialised == 0) return 1; /* NVML_ERROR_UNINITIALIZED */
    if (--initialised == 0) {
        close(driver_fd);
        driver_fd = -1;
    }
    return HL_NVML_SUCCESS;
}

hl_nvmlReturn_t nvmlDeviceGetCount_v2(unsigned *count) {
    if (!initialised) return 1;
    *count = device_count;
    return HL_NVML_SUCCESS;
}

hl_nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned index, hl_nvmlDevice_t *device) {
    if (!initialised) return 1;
    if (index >= device_count) return 2; /* NVML_ERROR_INVALID_ARGUMENT */
    *device = &devices[index];
    return HL_NVML_SUCCESS;
}

hl_nvmlReturn_t nvmlDeviceGetName(hl_nvmlDevice_t device, char *name, unsigned length) {
    snprintf(name, length, "Fake GPU %d", (int)(device - devices));
    return HL_NVML_SUCCESS;
}

hl_nvmlReturn_t nvmlDeviceGetUtilizationRates(hl_nvmlDevice_t device, hl_nvmlUtilization_t *u) {
    if (!initialised) return 1;
    if (!driver_reachable()) return 999;
    u->gpu = __atomic_load_n(&device->util, __ATOMIC_ACQUIRE);
    u->memory = u->gpu / 2;
    __atomic_add_fetch(&queries, 1, __ATOMIC_ACQ_REL);
    return HL_NVML_SUCCESS;
}

hl_nvmlReturn_t nvmlDeviceGetMemoryInfo(hl_nvmlDevice_t device, hl_nvmlMemory_t *memory) {
    if (!initialised) return 1;
    if (!driver_reachable()) return 999;
    memory->total = __atomic_load_n(&device->total, __ATOMIC_ACQUIRE);
    memory->used = __atomic_load_n(&device->used, __ATOMIC_ACQUIRE);
    memory->free = memory->total - memory->used;
    return HL_NVML_SUCCESS;
}
