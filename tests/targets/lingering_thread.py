"""The main module ends at once; a non-daemon thread keeps working after it, then an atexit
handler runs. Python waits for both before exiting, and so must the profile."""

import atexit
import sys
import threading
import time


def busy_worker():
    deadline = time.perf_counter() + 0.4
    total = 0
    while time.perf_counter() < deadline:
        for i in range(200):
            total += i * i
    print("worker done", flush=True)


def at_exit():
    print("atexit handler ran", flush=True)


atexit.register(at_exit)
threading.Thread(target=busy_worker).start()
print("main module done", flush=True)
sys.exit(0)
