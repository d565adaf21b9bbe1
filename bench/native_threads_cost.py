"""What watching the threads without a Python thread state costs the sampler thread (native
frames, docs/overhead.md): the sampler's own CPU time per tick, with native frames off and on,
in a process whose only Python thread sleeps while OpenBLAS's pool (idle) and IDLE C threads
(pthreads blocked in pause(), started through ctypes) exist. Fresh processes, modes
interleaved.

    python bench/native_threads_cost.py [ROUNDS] [IDLE] [ENGINE_SRC ...]

Each ENGINE_SRC (a checkout's src/ with its _native built in place) is measured beside the
installed heatline, e.g. the main checkout's, to compare a build without the listing.
"""

import os
import subprocess
import sys

# Each thread's time on a CPU so far, by thread id (the children's, here and in
# sampler_tick_cost.py).
CPU_BY_TASK = r"""
def cpu_by_task():
    out = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/schedstat") as f:
                out[tid] = int(f.read().split()[0])
        except OSError:
            pass
    return out
"""

CHILD = r"""
import os, sys, time
if sys.argv[2]:
    sys.path.insert(0, sys.argv[2])
import ctypes
import numpy  # OpenBLAS's pool starts here
import heatline

libc = ctypes.CDLL(None)
for _ in range(int(sys.argv[3])):  # C threads with no thread state, blocked for good
    handle = ctypes.c_ulong()
    libc.pthread_create(ctypes.byref(handle), None, libc.pause, None)
""" + CPU_BY_TASK + r"""

before = cpu_by_task()
heatline.start(native=sys.argv[1] == "on", quiet=True)
time.sleep(0.05)
sampler = [tid for tid in cpu_by_task() if tid not in before]
start = cpu_by_task()
time.sleep(3.0)
end = cpu_by_task()
data = heatline.stop().data
ns = sum(end[t] - start[t] for t in sampler if t in end)
print(ns / max(data["samples"], 1), data["samples"], len(before))
"""


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    idle = sys.argv[2] if len(sys.argv) > 2 else "0"
    sources = ["", *sys.argv[3:]]
    env = dict(os.environ)
    results: dict[tuple[str, str], list[float]] = {}
    tasks = 0
    for _ in range(rounds):
        for source in sources:
            for mode in ("off", "on"):
                out = subprocess.run([sys.executable, "-c", CHILD, mode, source, idle], env=env,
                                     capture_output=True, text=True, check=True).stdout.split()
                results.setdefault((source or "installed", mode), []).append(float(out[0]))
                tasks = int(out[2])
    print(f"{tasks} threads in the process ({idle} idle C threads), {rounds} rounds")
    for (source, mode), values in results.items():
        values.sort()
        print(f"{source} native {mode}: sampler CPU per tick median "
              f"{values[len(values) // 2] / 1e3:.1f} us "
              f"(min {values[0] / 1e3:.1f}, max {values[-1] / 1e3:.1f})")


if __name__ == "__main__":
    main()
