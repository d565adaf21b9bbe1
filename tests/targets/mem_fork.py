"""Forks children while another thread allocates; the children allocate (Python objects and
numpy) and exit, alternately through sys.exit (atexit handlers run) and os._exit, with
statuses 0, 1, 2."""

import os
import sys
import threading

import numpy as np

CHILDREN = 12
stop = threading.Event()


def churn():
    # Keeps allocating, so that a fork often lands while this thread is inside an allocator.
    while not stop.is_set():
        block = np.ones(20_000)
        values = block.tolist()
        del block, values


def child(index):
    arrays = [np.ones(5_000 * (k + 1)) for k in range(8)]
    words = [str(k) * 3 for k in range(20_000)]
    print(f"child {index}: {int(sum(a.sum() for a in arrays)) + len(words)}", flush=True)
    if index % 2:
        os._exit(index % 3)
    sys.exit(index % 3)


def main():
    worker = threading.Thread(target=churn, daemon=True)
    worker.start()
    for index in range(CHILDREN):
        pid = os.fork()
        if pid == 0:
            child(index)
        _, status = os.waitpid(pid, 0)
        print(f"parent: child {index} exited {os.waitstatus_to_exitcode(status)}", flush=True)
    stop.set()
    worker.join()
    print("parent done", flush=True)


if __name__ == "__main__":
    main()
