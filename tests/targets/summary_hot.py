"""The hottest lines: with "python" (argv[1]) one line runs a Python loop ("python TRUTH":
its busy time and that of everything before it); with "native" one line
hashes a buffer in hashlib's C code; with "spread" forty lines each run the same short loop,
so no line has a tenth of the time (each about 2.5%), unless the machine keeps the process off
its CPUs for long while one of them runs: that line is then busy that long (runnable counts as
busy), which "spread TRUTH" measures per line with _truth's clock."""

import hashlib
import json
import sys
import time

import _truth

N = 500_000


def _thread_busy_s():
    """This thread's busy time since it started: on a CPU, or runnable and waiting for one."""
    return time.thread_time() + _truth._runqueue_wait_s()


def python(truth_path=None):
    """With truth_path, {"before_s", "loop_s"}: the thread's busy time before the loop (the
    interpreter's start and this file's imports: a loaded machine can make them the busiest
    lines, runnable counting as busy) and in it."""
    before = _thread_busy_s()
    total = 0
    for i in range(4 * N):
        total += i % 3
    if truth_path:
        with open(truth_path, "w") as f:
            json.dump({"before_s": before, "loop_s": _thread_busy_s() - before}, f)
    return total


def native():
    buffer = bytes(64 << 20)
    return [hashlib.sha256(buffer).hexdigest() for _ in range(4)]


def spread(truth_path=None):
    """Each line's busy time (on a CPU or runnable: _truth's clock) is written to
    truth_path as {"lines": [seconds, ...]} when given: a line the machine kept off its CPU
    for long is busy that long, so a load spike can make one line hot in truth too."""
    clock = _truth._BusyClock() if truth_path else None
    marks = [clock.busy_s()] if clock else []
    total = 0
    total += sum(i % 2 for i in range(N))
    marks.append(clock.busy_s()) if clock else None
    total += sum(i % 3 for i in range(N))
    marks.append(clock.busy_s()) if clock else None
    total += sum(i % 4 for i in range(N))
    marks.append(clock.busy_s()) if clock else None
    total += sum(i % 5 for i in range(N))
    marks.append(clock.busy_s()) if clock else None
    total += sum(i % 6 for i in range(N))
    marks.append(clock.busy_s()) if clock else None
    total += sum(i % 7 for i in range(N))
    marks.append(clock.busy_s()) if clock else None
    total += sum(i % 8 for i in range(N))
    marks.append(clock.busy_s()) if clock else None
    total += sum(i % 9 for i in range(N))
    marks.append(clock.busy_s()) if clock else None
    total += sum(i % 10 for i in range(N))
    marks.append(clock.busy_s()) if clock else None
    total += sum(i % 11 for i in range(N))
    marks.append(clock.busy_s()) if clock else None
    total += sum(i % 12 for i in range(N))
    marks.append(clock.busy_s()) if clock else None
    total += sum(i % 13 for i in range(N))
    marks.append(clock.busy_s()) if clock else None
    total += sum(i % 14 for i in range(N))
    marks.append(clock.busy_s()) if clock else None
    total += sum(i % 15 for i in range(N))
    marks.append(clock.busy_s()) if clock else None
    total += sum(i % 16 for i in range(N))
    marks.append(clock.busy_s()) if clock else None
    total += sum(i % 17 for i in range(N))
    marks.append(clock.busy_s()) if clock else None
    total += sum(i % 18 for i in range(N))
    marks.append(clock.busy_s()) if clock else None
    total += sum(i % 19 for i in range(N))
    marks.append(clock.busy_s()) if clock else None
    total += sum(i % 20 for i in range(N))
    marks.append(clock.busy_s()) if clock else None
    total += sum(i % 21 for i in range(N))
    marks.append(clock.busy_s()) if clock else None
    total += sum(i % 22 for i in range(N))
    marks.append(clock.busy_s()) if clock else None
    total += sum(i % 23 for i in range(N))
    marks.append(clock.busy_s()) if clock else None
    total += sum(i % 24 for i in range(N))
    marks.append(clock.busy_s()) if clock else None
    total += sum(i % 25 for i in range(N))
    marks.append(clock.busy_s()) if clock else None
    total += sum(i % 26 for i in range(N))
    marks.append(clock.busy_s()) if clock else None
    total += sum(i % 27 for i in range(N))
    marks.append(clock.busy_s()) if clock else None
    total += sum(i % 28 for i in range(N))
    marks.append(clock.busy_s()) if clock else None
    total += sum(i % 29 for i in range(N))
    marks.append(clock.busy_s()) if clock else None
    total += sum(i % 30 for i in range(N))
    marks.append(clock.busy_s()) if clock else None
    total += sum(i % 31 for i in range(N))
    marks.append(clock.busy_s()) if clock else None
    total += sum(i % 32 for i in range(N))
    marks.append(clock.busy_s()) if clock else None
    total += sum(i % 33 for i in range(N))
    marks.append(clock.busy_s()) if clock else None
    total += sum(i % 34 for i in range(N))
    marks.append(clock.busy_s()) if clock else None
    total += sum(i % 35 for i in range(N))
    marks.append(clock.busy_s()) if clock else None
    total += sum(i % 36 for i in range(N))
    marks.append(clock.busy_s()) if clock else None
    total += sum(i % 37 for i in range(N))
    marks.append(clock.busy_s()) if clock else None
    total += sum(i % 38 for i in range(N))
    marks.append(clock.busy_s()) if clock else None
    total += sum(i % 39 for i in range(N))
    marks.append(clock.busy_s()) if clock else None
    total += sum(i % 40 for i in range(N))
    marks.append(clock.busy_s()) if clock else None
    total += sum(i % 41 for i in range(N))
    marks.append(clock.busy_s()) if clock else None
    if clock:
        clock.close()
        with open(truth_path, "w") as f:
            json.dump({"lines": [b - a for a, b in zip(marks, marks[1:])]}, f)
    return total


if __name__ == "__main__":
    {"python": python, "native": native, "spread": spread}[sys.argv[1]](*sys.argv[2:])
    print("done")
