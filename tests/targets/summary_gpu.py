"""A GPU left idle by its CPU side, against the fake NVML of tests/gpu (FAKE_NVML_PATH): the
device reports the utilisation given in argv[1] (percent) while the main thread prepares
batches in pure Python until heatline has sampled the device at least 15 times (100 ms apart),
however slowly the machine runs."""

import ctypes
import os
import sys

nvml = ctypes.CDLL(os.environ["FAKE_NVML_PATH"])
nvml.fake_nvml_set.argtypes = [ctypes.c_uint, ctypes.c_uint, ctypes.c_ulonglong, ctypes.c_ulonglong]
nvml.fake_nvml_queries.restype = ctypes.c_ulonglong


def prepare_batch():
    return sum(i * i % 11 for i in range(20_000))


nvml.fake_nvml_set(0, int(sys.argv[1]), 1 << 30, 16 << 30)
start = nvml.fake_nvml_queries()
batches = 0
while nvml.fake_nvml_queries() < start + 15:
    prepare_batch()
    batches += 1
print("done")
