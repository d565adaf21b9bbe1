"""Regions in fork children: the main process enters "main" and maps tasks on a fork Pool of
two, each task in a region "task". The truth, written (JSON) to argv[1]: the main region's
wall time as the program measures it, and the tasks run."""

import json
import multiprocessing
import sys
import time

import heatline

TASKS = 8


def work(i):
    with heatline.region("task"):
        end = time.perf_counter() + 0.05
        while time.perf_counter() < end:
            pass
    return i


if __name__ == "__main__":
    started = time.perf_counter()
    with heatline.region("main"):
        with multiprocessing.get_context("fork").Pool(2) as pool:
            done = pool.map(work, range(TASKS))
    main_s = time.perf_counter() - started
    with open(sys.argv[1], "w") as f:
        json.dump({"main_s": main_s, "tasks": len(done)}, f)
