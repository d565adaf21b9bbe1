"""Sleeps beside a little computing, with its own CPU-time measurements: on a busy machine a
thread woken from time.sleep() waits for a CPU before it runs (state R, its CPU clock still),
and that wait belongs to the sleep, not to running work. Prints {"sleep_cpu_s", "work_cpu_s",
"sleeps"}: the thread's CPU time inside the sleep calls and inside the work."""

import json
import sys
import time


def work(n):
    total = 0
    for i in range(n):
        total += i % 7
    return total


def main(rounds):
    sleep_cpu = work_cpu = 0.0
    for _ in range(rounds):
        before = time.thread_time()
        time.sleep(0.05)  # the sleep
        middle = time.thread_time()
        work(200_000)  # the work
        after = time.thread_time()
        sleep_cpu += middle - before
        work_cpu += after - middle
    print(json.dumps({"sleep_cpu_s": sleep_cpu, "work_cpu_s": work_cpu, "sleeps": rounds}))


main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
