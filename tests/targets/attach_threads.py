"""For heatline attach: THREADS worker threads, each spinning in a function of its own (worker_0,
worker_1...) until DIRECTORY/finish, the main thread waiting for them. argv: DIRECTORY THREADS."""

import os
import sys
import threading

from _attachable import allow_tracing, mark

DIRECTORY, THREADS = sys.argv[1], int(sys.argv[2])


def spin():
    total = 0
    while not os.path.exists(os.path.join(DIRECTORY, "finish")):
        for i in range(20000):
            total += i * i


def make(number):
    def worker():
        spin()
    worker.__name__ = worker.__qualname__ = f"worker_{number}"
    return worker


allow_tracing()
threads = [threading.Thread(target=make(n), name=f"w{n}") for n in range(THREADS)]
for thread in threads:
    thread.start()
mark(DIRECTORY, "ready", str(os.getpid()))
for thread in threads:
    thread.join()
print("done", flush=True)
