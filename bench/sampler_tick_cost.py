"""What one tick of the sampler thread costs while the program runs Python: the sampler's own
CPU time per tick (its /proc/self/task/TID/schedstat over 3 s) in a process whose main thread
loops ten calls deep, with --cpu-only (the tick is the same in both modes) and the default
interval. Fresh processes, trees interleaved; docs/overhead.md, "Diagnostics".
With --idle-threads N the process also has N threads that wait on an event throughout (a
pool's helper threads, an executor's idle workers).

    python bench/sampler_tick_cost.py [--strace] [--idle-threads N] [ROUNDS] [ENGINE_SRC ...]

Each ENGINE_SRC (a directory heatline imports from first: a checkout's src/ with its _native
built in place, or a `pip install --target` of another commit) is measured beside the
installed heatline. With --strace (strace on PATH): instead, the sampler thread's system calls
per tick, by name, from one run of each tree under `strace -f`.
"""

import collections
import os
import re
import subprocess
import sys
import tempfile

from native_threads_cost import CPU_BY_TASK

CHILD = r"""
import os, sys, time
if sys.argv[1]:
    sys.path.insert(0, sys.argv[1])
import threading
import heatline
""" + CPU_BY_TASK + r"""
event = threading.Event()
for _ in range(int(sys.argv[2])):
    threading.Thread(target=event.wait, daemon=True).start()

def leaf(n):
    s = 0
    for i in range(n):
        s += i % 7
    return s

def call(depth):
    return leaf(20000) if depth == 0 else call(depth - 1)

before = cpu_by_task()
heatline.start(cpu_only=True, quiet=True)
sampler = [tid for tid in cpu_by_task() if tid not in before]
start = cpu_by_task()
t0 = time.monotonic()
while time.monotonic() - t0 < 3.0:
    call(10)
end = cpu_by_task()
data = heatline.stop().data
ns = sum(end[t] - start[t] for t in sampler if t in end)
print(ns / max(data["samples"], 1), data["samples"], ",".join(sampler))
"""


IDLE_THREADS = 0


def _run(source: str, prefix: list[str]) -> list[str]:
    return subprocess.run([*prefix, sys.executable, "-c", CHILD, source, str(IDLE_THREADS)],
                          capture_output=True, text=True, check=True).stdout.split()


def _syscalls(source: str) -> tuple[int, dict[str, float]]:
    """The sampler thread's system calls per tick under strace -f (one run)."""
    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, "trace")
        out = _run(source, ["strace", "-f", "-o", trace])
        samples, sampler = int(out[1]), out[2]
        counts: collections.Counter[str] = collections.Counter()
        with open(trace) as lines:
            for line in lines:
                match = re.match(r"(\d+)\s+([a-z_0-9]+)\(", line)
                if match and match.group(1) == sampler:
                    counts[match.group(2)] += 1
    return samples, {name: n / max(samples, 1) for name, n in counts.most_common()}


def main() -> None:
    global IDLE_THREADS
    args = [a for a in sys.argv[1:] if a != "--strace"]
    if "--idle-threads" in args:
        at = args.index("--idle-threads")
        IDLE_THREADS = int(args[at + 1])
        del args[at : at + 2]
    rounds = int(args.pop(0)) if args and args[0].isdigit() else 7
    sources = ["", *args]
    if "--strace" in sys.argv:
        for source in sources:
            samples, per_tick = _syscalls(source)
            total = sum(per_tick.values())
            print(f"{source or 'installed'}: {samples} ticks, {total:.1f} system calls a tick")
            for name, n in per_tick.items():
                print(f"  {name:20} {n:6.2f}")
        return
    results: dict[str, list[float]] = {}
    for _ in range(rounds):
        for source in sources:
            results.setdefault(source or "installed", []).append(float(_run(source, [])[0]))
    print(f"{rounds} rounds")
    for source, values in results.items():
        values.sort()
        print(f"{source}: sampler CPU per tick median {values[len(values) // 2] / 1e3:.1f} us "
              f"(min {values[0] / 1e3:.1f}, max {values[-1] / 1e3:.1f})")


if __name__ == "__main__":
    main()
