"""Ground truth for pool workers that wait for work: a fork Pool(2) sits idle while the parent
runs a known CPU-bound function (compute) for about 1.5 s, then maps a short known task, one
per worker at most. A worker waits for tasks in multiprocessing's worker loop, under the
parent's frames it inherited at the fork (the `with` line among them): that wait is the
worker's idle time, charged to no line; its task's time is charged to the task's lines.

Prints one JSON line: this process's pid, the parent's busy time in compute (on a CPU plus
runnable, _truth.busy_s), and per task the pid of the worker that ran it, its wall time in the
task and its busy time in the task's loop (spin)."""

import json
import multiprocessing
import os
import time

from _truth import busy_s

PARENT_S = 1.5
TASK_ITERATIONS = 300_000


def spin(n):
    total = 0
    for i in range(n):
        total += i % 7
    return total


def compute(seconds):
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        spin(20_000)


def task(n):
    start = time.perf_counter()
    busy = busy_s(spin, n)
    return {"pid": os.getpid(), "wall_s": time.perf_counter() - start, "busy_s": busy}


if __name__ == "__main__":
    with multiprocessing.get_context("fork").Pool(2) as pool:  # the pool waits here
        parent_busy = busy_s(compute, PARENT_S)
        tasks = pool.map(task, [TASK_ITERATIONS] * 2, chunksize=1)
    print(json.dumps({"pid": os.getpid(), "parent_busy_s": parent_busy, "tasks": tasks}))
