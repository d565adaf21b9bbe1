"""For heatline attach: the main thread blocked in time.sleep(SECONDS) the whole time (it
prints how long it slept), a worker thread spinning in pure Python until DIRECTORY/finish.
argv: DIRECTORY SECONDS. Writes DIRECTORY/ready (its pid) once both run."""

import os
import sys
import threading
import time

from _attachable import allow_tracing, mark

DIRECTORY, SECONDS = sys.argv[1], float(sys.argv[2])


def spin():
    total = 0
    while not os.path.exists(os.path.join(DIRECTORY, "finish")):
        for i in range(20000):
            total += i * i


allow_tracing()
worker = threading.Thread(target=spin, name="worker", daemon=True)
worker.start()
mark(DIRECTORY, "ready", str(os.getpid()))
begun = time.monotonic()
time.sleep(SECONDS)
print(f"slept {time.monotonic() - begun >= SECONDS}", flush=True)
