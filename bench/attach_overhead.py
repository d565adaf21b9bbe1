"""What `heatline attach` costs: the time to attach and to detach, and the target's slowdown
while attached compared with the same program run under `heatline script.py`.

    python bench/attach_overhead.py [--rounds 5] [--seconds 3]

The target is a busy loop of pure Python calls (two threads: the main one counting, one more
counting in another function, as a service's workers would); it writes its loop count every
50 ms to a file, so its rate over any window can be read back. Per round, in turns:
  - plain: the program alone for --seconds;
  - heatline: the program under `heatline -q` for --seconds (its profiled part);
  - attached: the program alone, `heatline attach --duration SECONDS` on it from this process
    (the command, as a user runs it), its rate over the attached window.
Rates are medians over the rounds; the slowdown is against the plain rate. Attach time is the
command's own report (from the injection to the profile running in the target), detach time
from the stop to the profile written, each a median with the largest. Prints Markdown.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

TARGET = r"""
import os, sys, threading, time
out = sys.argv[1]
counts = [0, 0]
def count(slot):
    def step(n):
        return n + 1
    while True:
        counts[slot] = step(counts[slot])
def other():
    count(1)
threading.Thread(target=other, daemon=True).start()
with open(out, "w", buffering=1) as f:
    while True:
        time.sleep(0.05)
        f.write(f"{time.time()} {counts[0] + counts[1]}\n")
"""


def _rate(path, start, end):
    points = []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 2:
                points.append((float(parts[0]), int(parts[1])))
    inside = [p for p in points if start <= p[0] <= end]
    if len(inside) < 2:
        return float("nan")
    (t0, c0), (t1, c1) = inside[0], inside[-1]
    return (c1 - c0) / (t1 - t0)


def _run(command, work, seconds, attach=False):
    log = os.path.join(work, "count.log")
    if os.path.exists(log):
        os.unlink(log)
    process = subprocess.Popen([*command, log], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    try:
        while not os.path.exists(log) or os.path.getsize(log) == 0:
            time.sleep(0.01)
        time.sleep(0.5)  # past the start
        timing = {}
        if attach:
            done = subprocess.run([sys.executable, "-m", "heatline", "attach", str(process.pid),
                                   "--duration", str(seconds), "-q"], capture_output=True,
                                  text=True, check=True)
            attached = re.search(r"in (\d+) ms; profiling", done.stderr)
            detached = re.search(r"detached from process \d+ in (\d+) ms", done.stderr)
            timing = {"attach_ms": int(attached.group(1)), "detach_ms": int(detached.group(1))}
            end = time.time()
            # the attached window: the profile ran for `seconds` before the detach began
            start = end - int(detached.group(1)) / 1e3 - seconds
            end = start + seconds
        else:
            start = time.time()
            time.sleep(seconds)
            end = time.time()
        return _rate(log, start, end), timing
    finally:
        process.kill()
        process.wait()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--out")
    args = parser.parse_args()
    results = {"plain": [], "heatline": [], "attached": [], "attach_ms": [], "detach_ms": []}
    with tempfile.TemporaryDirectory() as work:
        target = os.path.join(work, "target.py")
        with open(target, "w") as f:
            f.write(TARGET)
        for _ in range(args.rounds):
            results["plain"].append(_run([sys.executable, target], work, args.seconds)[0])
            results["heatline"].append(_run([sys.executable, "-m", "heatline", "-q", target],
                                            work, args.seconds)[0])
            rate, timing = _run([sys.executable, target], work, args.seconds, attach=True)
            results["attached"].append(rate)
            results["attach_ms"].append(timing["attach_ms"])
            results["detach_ms"].append(timing["detach_ms"])
    plain = statistics.median(results["plain"])
    load = os.getloadavg()[0]
    print(f"CPython {sys.version.split()[0]}, {args.rounds} rounds of {args.seconds:g} s, "
          f"load average {load:.1f}\n")
    print("| mode | target's loop rate | slowdown |")
    print("|---|---|---|")
    for mode in ("plain", "heatline", "attached"):
        rate = statistics.median(results[mode])
        slowdown = "-" if mode == "plain" else f"{(plain / rate - 1) * 100:+.1f}%"
        print(f"| {mode} | {rate / 1e6:.2f} M/s | {slowdown} |")
    print()
    for key in ("attach_ms", "detach_ms"):
        values = results[key]
        print(f"{key}: median {statistics.median(values):.0f} ms, max {max(values)} ms "
              f"({values})")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
