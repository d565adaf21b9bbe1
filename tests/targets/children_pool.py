"""Ground truth for child processes: a multiprocessing Pool (start method from argv[1]) whose
workers run a pure-Python loop and measure their own busy time (CPU time plus time runnable
but waiting for a CPU, as _truth.py measures it), and allocate a known buffer. Prints one JSON
line: the workers' summed busy time and the bytes they allocated, and the parent's own figures
over the line where it waits for them (wall time, busy time, times it blocked: _truth.Span)."""

import json
import multiprocessing
import os
import sys

from _truth import Span, busy_s

BUFFER_BYTES = 64 * 1024 * 1024


def loop(n):
    total = 0
    for i in range(n):
        total += i % 7
    return total


def python_work(n):
    return busy_s(loop, n)


def allocate(size):
    buffer = bytearray(size)
    buffer[::4096] = b"x" * len(buffer[::4096])
    return len(buffer)


if __name__ == "__main__":
    context = multiprocessing.get_context(sys.argv[1])
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    with context.Pool(2) as pool:
        with Span() as parent:
            busy = pool.map(python_work, [3_000_000] * rounds)  # the parent waits here
        allocated = pool.map(allocate, [BUFFER_BYTES] * 2)
    print(json.dumps({"busy_s": sum(busy), "allocated": sum(allocated), "pid": os.getpid(),
                      "parent": {"wall_s": parent.wall_s, "busy_s": parent.busy_s,
                                 "blocks": parent.blocks}}))
