"""A function and its generator expression on one line: the caller's frame (running sum(), C
code) and the generator's (running the expression) share the line, and each function's own
time is what ran in its own frames, never more than the time it was on the stack."""

import sys
import time


def squares(n): return sum(i * i for i in range(n))  # noqa: E704 -- the line under test


def main(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        squares(20000)


main(float(sys.argv[1]) if len(sys.argv) > 1 else 1.0)
