"""A combined memory peak that is not the main process's own, which notes
its own truth: the main process first holds 150 MiB alone and frees it (its own peak), then
holds 40 MiB while a fork Pool worker allocates 150 MiB inside pool.apply: the processes'
combined peak (190 MiB and what else they hold) is reached when the worker allocates, during
pool.apply.

Writes to argv[1] wall-clock times (time.time()) around pool.apply, around the worker's
allocation, and around a 1 MiB allocation of the main process (CLOCK_LINE) whose moment the
profile records too, so that the test can put the wall-clock times on the profile's clock
with an uncertainty it measures; the worker's pid and the program's lines."""

import json
import multiprocessing
import os
import sys
import time

MIB = 2**20


def work():
    began = time.time()
    data = bytearray(150 * MIB)  # WORKER_LINE
    allocated = time.time()
    time.sleep(0.3)
    return {"pid": os.getpid(), "began": began, "allocated": allocated, "held": len(data)}


def line_of(tag):
    with open(__file__) as f:
        return next(n for n, text in enumerate(f, 1) if text.rstrip().endswith("# " + tag))


if __name__ == "__main__":
    big = bytearray(150 * MIB)  # MAIN_ALONE_LINE
    del big
    keep = bytearray(40 * MIB)  # MAIN_KEEP_LINE
    clock_began = time.time()
    clock = bytearray(MIB)  # CLOCK_LINE
    clock_ended = time.time()
    with multiprocessing.get_context("fork").Pool(1) as pool:
        apply_began = time.time()
        worker = pool.apply(work)
        apply_ended = time.time()
    with open(sys.argv[1], "w") as f:
        json.dump({"apply": [apply_began, apply_ended], "clock": [clock_began, clock_ended],
                   "worker": worker, "main_pid": os.getpid(),
                   "lines": {tag: line_of(tag) for tag in
                             ("WORKER_LINE", "MAIN_ALONE_LINE", "MAIN_KEEP_LINE", "CLOCK_LINE")},
                   "kept": len(keep) + len(clock)}, f)
