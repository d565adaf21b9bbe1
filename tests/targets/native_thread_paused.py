"""Native frames' target: a C thread (no Python thread state, tests/targets/_burn.c) burns CPU
while profiling is paused for a while: that CPU time must not be charged to it.

Usage: native_thread_paused.py LIBRARY TRUTH_JSON

The truth file holds {"tid", "total_ns": the CPU time its functions measured over its life,
"paused_ns": its CPU time between heatline.pause() and heatline.resume() (/proc's schedstat,
read here; the pause lasts until it reached 1 s, whatever the machine's load)}.
"""

import ctypes
import json
import os
import sys
import time

import heatline

library, truth_path = sys.argv[1:3]
lib = ctypes.CDLL(library)
lib.burn_thread_start.restype = ctypes.c_void_p
lib.burn_thread_start.argtypes = [ctypes.c_double, ctypes.c_double, ctypes.c_int]
lib.burn_thread_join.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_int64)]


def cpu_ns(tid):
    with open(f"/proc/self/task/{tid}/schedstat") as f:
        return int(f.read().split()[0])


before = set(os.listdir("/proc/self/task"))
handle = lib.burn_thread_start(2.0, 2.0, 40)
while not set(os.listdir("/proc/self/task")) - before:
    time.sleep(0.01)
tid = int(next(iter(set(os.listdir("/proc/self/task")) - before)))
time.sleep(0.3)
heatline.pause()
paused_from = cpu_ns(tid)
while cpu_ns(tid) - paused_from < 1_000_000_000:
    time.sleep(0.02)
paused_ns = cpu_ns(tid) - paused_from
heatline.resume()
out = (ctypes.c_int64 * 3)()
lib.burn_thread_join(handle, out)
with open(truth_path, "w") as f:
    json.dump({"tid": out[2], "total_ns": out[0] + out[1], "paused_ns": paused_ns}, f)
