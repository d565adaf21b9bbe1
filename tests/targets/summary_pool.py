"""A multiprocessing Pool of 3 workers given 3 tasks, one each (a barrier makes every worker take
exactly one task, whatever the machine's load): with "imbalanced" (argv[1]) one task is 30 times
longer than the others, so one worker is busy while the other two idle; with "balanced" the
three tasks are equal. Prints the tasks' results."""

import multiprocessing
import sys

WORKERS = 3
UNIT = 150_000

barrier = None


def start(shared):
    global barrier
    barrier = shared


def loop(n):
    total = 0
    for i in range(n):
        total += i % 7
    return total


def task(n):
    barrier.wait()  # every worker holds one task before any runs: one task per worker
    return loop(n)


if __name__ == "__main__":
    context = multiprocessing.get_context("fork")
    sizes = [30 * UNIT, UNIT, UNIT] if sys.argv[1] == "imbalanced" else [10 * UNIT] * 3
    with context.Pool(WORKERS, initializer=start, initargs=(context.Barrier(WORKERS),)) as pool:
        print(pool.map(task, sizes, chunksize=1))  # the parent waits here
