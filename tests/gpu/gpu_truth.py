"""Ground truth for GPU profiling, run against the fake NVML and CUPTI (tests/gpu/fake_*.c).

Every fake operation below has a known device duration (and bytes), launched from a line marked
`# L:<tag>`; test_gpu.py finds the lines by their tags and checks heatline's per-line GPU time,
launches, copy bytes and allocations exactly, the kernels table and the device timeline.
Prints "done" at the end so tests can check the program ran as it would without heatline.
"""

import ctypes
import os
import threading
import time

cupti = ctypes.CDLL(os.environ["FAKE_CUPTI_PATH"])
nvml = ctypes.CDLL(os.environ["FAKE_NVML_PATH"])
cupti.fake_launch.argtypes = [ctypes.c_char_p, ctypes.c_uint64]
cupti.fake_memcpy.argtypes = [ctypes.c_uint64, ctypes.c_int, ctypes.c_uint64]
cupti.fake_memset.argtypes = [ctypes.c_uint64, ctypes.c_uint64]
cupti.fake_alloc.argtypes = [ctypes.c_uint64]
cupti.fake_alloc.restype = ctypes.c_uint64
cupti.fake_free.argtypes = [ctypes.c_uint64]
cupti.fake_deliver.argtypes = [ctypes.c_int]
nvml.fake_nvml_set.argtypes = [ctypes.c_uint, ctypes.c_uint, ctypes.c_ulonglong, ctypes.c_ulonglong]
nvml.fake_nvml_queries.restype = ctypes.c_ulonglong
ctypes.CDLL("libstdc++.so.6")  # as torch has it loaded: kernel names can then be demangled

GIB = 1 << 30
MATMUL = b"_Z6matmulPKfS0_Pfi"


def wait_sampled():
    """Until the profiler's sampler has read NVML twice more (immediately without heatline)."""
    start = nvml.fake_nvml_queries()
    deadline = time.monotonic() + 60
    while nvml.fake_nvml_queries() < start + 2 and time.monotonic() < deadline:
        if not os.environ.get("HEATLINE_GPU_PROFILED"):
            return
        time.sleep(0.01)


def matmuls():
    for _ in range(10):
        cupti.fake_launch(MATMUL, 3_000_000)  # L:matmul


def copies():
    cupti.fake_memcpy(1 << 20, 1, 500_000)  # L:h2d
    cupti.fake_memcpy(4096, 2, 20_000)  # L:d2h
    cupti.fake_memset(8192, 7_000)  # L:memset


def worker():
    for _ in range(5):
        cupti.fake_launch(b"relu_kernel", 1_000_000)  # L:thread
    cupti.fake_launch(MATMUL, 2_000_000)  # L:thread_matmul


nvml.fake_nvml_set(0, 40, 1 * GIB, 16 * GIB)
wait_sampled()
buffer = cupti.fake_alloc(256 << 20)  # L:alloc
matmuls()
copies()
cupti.fake_deliver(1)  # records handed over mid-run, from another thread, as CUPTI's worker does
nvml.fake_nvml_set(0, 80, 3 * GIB, 16 * GIB)
wait_sampled()
thread = threading.Thread(target=worker)
thread.start()
thread.join()
cupti.fake_free(buffer)
cupti.fake_other_call()
nvml.fake_nvml_set(0, 0, GIB // 2, 16 * GIB)
wait_sampled()
print("done")
