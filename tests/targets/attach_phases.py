"""For heatline attach: phases of known kind, one after another on the main thread, for as long
as the test lets it run (until DIRECTORY/finish), each instance's wall interval (time.time())
and busy time recorded, so the test can tell the truth of any window: python (a pure-Python
loop), native (hashlib over a large buffer, the GIL released), system (time.sleep).
argv: DIRECTORY. Writes DIRECTORY/ready (its pid) before the first phase, DIRECTORY/truth.json
at the end: [[phase, start_epoch, end_epoch, busy_s], ...]."""

import hashlib
import json
import os
import sys
import time

from _attachable import allow_tracing, mark
from _truth import _BusyClock

DIRECTORY = sys.argv[1]
PHASE_S = 0.25
DATA = b"x" * (1 << 20)


def python_phase():
    end = time.perf_counter() + PHASE_S
    total = 0
    while time.perf_counter() < end:
        for i in range(2000):
            total += i * i
    return total


def native_phase():
    end = time.perf_counter() + PHASE_S
    while time.perf_counter() < end:
        hashlib.sha256(DATA).digest()


def system_phase():
    time.sleep(PHASE_S)


allow_tracing()
record = []
mark(DIRECTORY, "ready", str(os.getpid()))
while not os.path.exists(os.path.join(DIRECTORY, "finish")):
    for phase in (python_phase, native_phase, system_phase):
        clock = _BusyClock()
        busy, start = clock.busy_s(), time.time()
        phase()
        end, busy = time.time(), clock.busy_s() - busy
        clock.close()
        record.append([phase.__name__, start, end, busy])
mark(DIRECTORY, "truth.json", json.dumps(record))
