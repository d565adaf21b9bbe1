"""Ground truth for waiting for a CPU: 2 x os.cpu_count() processes (fork) each spin in pure
Python for SPIN_S of wall time, so the machine has twice as many runnable threads as CPUs and
each worker spends about half its time on a run queue. Each worker measures its own spin: its
CPU time (time.thread_time), its wall time, and from its schedstat its run-queue wait and its
timeslices. Prints one JSON object: {pid: {"cpu_s", "wall_s", "wait_s", "slices"}}. An
argument sets the number of workers instead (1: a machine that is not oversubscribed by the
program itself)."""

import json
import multiprocessing
import os
import sys
import threading
import time

SPIN_S = 1.5


def _schedstat():
    with open(f"/proc/self/task/{threading.get_native_id()}/schedstat") as f:
        fields = f.read().split()
    return int(fields[1]) / 1e9, int(fields[2])


def spin(until):
    total = 0
    while time.perf_counter() < until:
        total += 1
    return total


def worker(_):
    wait0, slices0 = _schedstat()
    cpu0, wall0 = time.thread_time(), time.perf_counter()
    spin(wall0 + SPIN_S)
    cpu1, wall1 = time.thread_time(), time.perf_counter()
    wait1, slices1 = _schedstat()
    return os.getpid(), {"cpu_s": cpu1 - cpu0, "wall_s": wall1 - wall0,
                         "wait_s": wait1 - wait0, "slices": slices1 - slices0}


if __name__ == "__main__":
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 2 * (os.cpu_count() or 1)
    context = multiprocessing.get_context("fork")
    processes = []
    queue = context.SimpleQueue()
    for _ in range(count):
        process = context.Process(target=lambda q=queue: q.put(worker(None)))
        process.start()
        processes.append(process)
    results = dict(queue.get() for _ in processes)
    for process in processes:
        process.join()
    print(json.dumps(results))
