"""The watched program of bench/top_overhead.py and bench/dump_overhead.py: a service-like
process whose main thread counts in a loop (two more threads asleep, as a service's helpers
would be). Run as `python -c BUSY_TARGET SECONDS`: it writes "ready", waits for a line on stdin,
counts for SECONDS, then writes "LOOPS CPU_SECONDS" (CPU of its main thread over the count)."""

import subprocess

BUSY_TARGET = r"""
import sys, threading, time
threading.Thread(target=time.sleep, args=(3600,), daemon=True).start()
threading.Thread(target=time.sleep, args=(3600,), daemon=True).start()
def work(seconds):
    n = 0
    end = time.perf_counter() + seconds
    cpu = time.thread_time()
    while time.perf_counter() < end:
        for _ in range(10000):
            n += 1
    return n, time.thread_time() - cpu
sys.stdout.write("ready\n"); sys.stdout.flush()
sys.stdin.readline()
n, cpu = work(float(sys.argv[1]))
sys.stdout.write(f"{n} {cpu}\n")
"""


def python_version(python):
    """The version ("3.11.9") of the interpreter at path python."""
    return subprocess.run([python, "-c", "import sys; print(sys.version.split()[0])"],
                          capture_output=True, text=True, check=True).stdout.strip()
