"""Native frames' target for threads without a Python thread state: a pthread started by a C
library (tests/targets/_burn.c, burn_thread_start) burns CPU in burn_a and burn_b, 1:3, while
the main thread runs Python and then waits for it.

Usage: native_thread_burn.py LIBRARY TRUTH_JSON

The truth file holds {"tid": the C thread's kernel id, "a_ns", "b_ns": the CPU time each
function measured with the thread's CPU clock, "fds_before", "fds_after": the program's
descriptors before the thread started and after it ended (heatline must add none)}.
"""

import ctypes
import json
import os
import sys

library, truth_path = sys.argv[1:3]
lib = ctypes.CDLL(library)  # the GIL released around each call
lib.burn_thread_start.restype = ctypes.c_void_p
lib.burn_thread_start.argtypes = [ctypes.c_double, ctypes.c_double, ctypes.c_int]
lib.burn_thread_join.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_int64)]

fds_before = sorted(os.listdir("/proc/self/fd"))
handle = lib.burn_thread_start(1.2, 3.6, 150)
total = 0
for i in range(2_000_000):  # Python on the main thread meanwhile
    total += i
out = (ctypes.c_int64 * 3)()
lib.burn_thread_join(handle, out)
fds_after = sorted(os.listdir("/proc/self/fd"))
with open(truth_path, "w") as f:
    json.dump({"a_ns": out[0], "b_ns": out[1], "tid": out[2], "fds_before": fds_before,
               "fds_after": fds_after}, f)
