"""Ground truth for the OTLP export: two Python phases, the second doing twice the first's
work, and a blocking one, each timing itself (_truth.py). Prints {"pid": ...} on stdout.

With the argument "fork", a forked child first spins in child_spin for about 0.3 s of CPU
time while the parent runs its phases, and the parent prints {"pid", "child"}: the merged
profile has two processes and each function is in one of them. (The child leaves with
os._exit, so only the parent writes the truth file.)"""

import json
import os
import sys
import time

from _truth import phase

SCALE = float(os.environ.get("HEATLINE_TARGET_SCALE", "1"))


@phase("python")
def parse_records():
    total = 0
    for i in range(int(1_500_000 * SCALE)):
        total += i * i % 7
    return total


@phase("python")
def score_records():
    total = 0
    for i in range(int(3_000_000 * SCALE)):
        total += i * i % 11
    return total


@phase("system")
def wait_for_io():
    time.sleep(0.3 * SCALE)


def child_spin():
    end = time.thread_time() + 0.3 * SCALE
    total = 0
    while time.thread_time() < end:
        for i in range(1000):
            total += i % 3
    return total


def main():
    child = 0
    if sys.argv[1:] == ["fork"]:
        child = os.fork()
        if child == 0:
            child_spin()
            sys.stdout.flush()
            os._exit(0)
    parse_records()
    score_records()
    wait_for_io()
    if child:
        os.waitpid(child, 0)
    print(json.dumps({"pid": os.getpid(), "child": child}), flush=True)


if __name__ == "__main__":
    main()
