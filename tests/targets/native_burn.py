"""Native frames' target: C functions burning known CPU (tests/targets/_burn.c, built by
tests/integration/test_native_frames.py), called from one line each way.

Usage: native_burn.py LIBRARY SECOND_LIBRARY TRUTH_JSON

  line A (held):    burn_a and burn_b called with the GIL held (ctypes.PyDLL), 3:1;
  line B (released): burn_a and burn_b called from a thread, GIL released (ctypes.CDLL), 1:3;
  line C (unloaded): x_burn_a of a second library, which is then dlclose()d: its names must
                     survive the unloading.

The truth file maps each tag to {"line": number, "a_ns": ..., "b_ns": ...}: the CPU time each
function measured with the thread's CPU clock (_burn.c).
"""

import _ctypes
import ctypes
import json
import sys
import threading

library, second, truth_path = sys.argv[1:4]
ROUNDS = 90
truth = {}


def record(tag, line, a_ns, b_ns):
    entry = truth.setdefault(tag, {"line": line, "a_ns": 0, "b_ns": 0})
    entry["a_ns"] += a_ns
    entry["b_ns"] += b_ns


def line_of(marker):
    with open(__file__) as f:
        return next(n for n, text in enumerate(f, 1) if text.rstrip().endswith(marker))


held = ctypes.PyDLL(library)
released = ctypes.CDLL(library)
for lib in (held, released):
    lib.burn_a.restype = lib.burn_b.restype = ctypes.c_int64
    lib.burn_a.argtypes = lib.burn_b.argtypes = [ctypes.c_double]

for _ in range(ROUNDS):
    a, b = held.burn_a(0.03), held.burn_b(0.01)  # line A
    record("held", line_of("# line A"), a, b)


def worker():
    for _ in range(ROUNDS):
        a, b = released.burn_a(0.01), released.burn_b(0.03)  # line B
        record("released", line_of("# line B"), a, b)


thread = threading.Thread(target=worker)
thread.start()
thread.join()

unloaded = ctypes.CDLL(second)
unloaded.x_burn_a.restype = ctypes.c_int64
unloaded.x_burn_a.argtypes = [ctypes.c_double]
for _ in range(10):
    a = unloaded.x_burn_a(0.03)  # line C
    record("unloaded", line_of("# line C"), a, 0)
handle = unloaded._handle
del unloaded
_ctypes.dlclose(handle)
with open("/proc/self/maps") as maps:
    truth["unloaded"]["still_mapped"] = second in maps.read()
total = 0
for i in range(300000):  # Python time after the unloading: the sampler reads the maps again
    total += i

with open(truth_path, "w") as f:
    json.dump(truth, f)
