"""What `heatline dump` costs the process it reads, and how long one dump takes.

    python bench/dump_overhead.py [--rounds 5] [--seconds 3] [--python PYTHON]

A busy-loop target (its main thread counting in a loop, two more threads asleep, as a service's
helpers would be) runs for --seconds while nothing reads it, while heatline dump reads it 10
times a second with its threads stopped meanwhile (the default), and 10 times a second without
stopping them (--no-pause); the modes take turns, --rounds times each, and the target's loop
rate is compared by medians. The reading is done in this process (heatline.engine.dump.read, the
CLI's own call), so what is measured is the dump's effect on the target, not the start-up of a
Python process; a last mode runs the `heatline dump` command itself 10 times a second, start-up
included, as `watch -n 0.1 heatline dump PID` would. Per dump: the wall time of one read, how
long the threads stayed stopped (pause) and how long reading the interpreter's state took.

Then a hung process: tests/targets/dump_deadlock.py (a thread holding the GIL in pause(), the
main thread waiting for it; every thread asleep), read --idle-dumps times with its threads
stopped: how long they stay stopped, and one dump's time.

The target runs on --python (default: this one), which heatline reads whatever its version.
Prints Markdown tables (docs/design-live.md, "heatline dump"); --out writes the raw numbers as JSON.
"""

import argparse
import json
import math
import tempfile
import os
import platform
import statistics
import subprocess
import sys
import time

from busy_target import BUSY_TARGET, python_version



def one_round(python, seconds, mode, nice):
    """The target's loop count over `seconds` while `mode` reads it, and the dumps' figures."""
    from heatline.engine import dump as reader

    prefix = ["nice", "-n", str(nice)] if nice else []
    target = subprocess.Popen([*prefix, python, "-c", BUSY_TARGET, str(seconds)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert target.stdout.readline() == "ready\n"
    dumps = []
    target.stdin.write("go\n")
    target.stdin.flush()
    start = time.monotonic()
    next_dump = start + 0.1
    while target.poll() is None and time.monotonic() < start + seconds:
        if mode == "none":
            time.sleep(0.05)
            continue
        delay = next_dump - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        next_dump += 0.1
        began = time.perf_counter()
        if mode == "command":
            subprocess.run([sys.executable, "-m", "heatline", "dump", str(target.pid)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
            dumps.append({"wall_s": time.perf_counter() - began})
            continue
        try:
            result = reader.read(target.pid, pause=mode == "paused")
        except reader.DumpError:
            break  # the target finished meanwhile
        dumps.append({"wall_s": time.perf_counter() - began, "pause_s": result.pause_s,
                      "read_s": result.read_s})
    count = int(target.communicate()[0].split()[0])
    return count / seconds, dumps


DEADLOCK = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests",
                        "targets", "dump_deadlock.py")


def idle_dumps(python, count):
    """Paused dumps of a deadlocked process: (pause_s, wall_s) each."""
    from heatline.engine import dump as reader

    with tempfile.TemporaryDirectory() as directory:
        ready = os.path.join(directory, "ready")
        target = subprocess.Popen([python, DEADLOCK, ready])
        try:
            while not os.path.exists(ready):
                time.sleep(0.01)
            time.sleep(0.5)  # the thread is in pause() by now
            figures = []
            for _ in range(count):
                began = time.perf_counter()
                result = reader.read(target.pid, pause=True)
                figures.append((result.pause_s, time.perf_counter() - began))
                time.sleep(0.05)
        finally:
            target.kill()
            target.wait()
    return figures


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--idle-dumps", type=int, default=50)
    parser.add_argument("--out", help="also write the raw numbers to this JSON file")
    parser.add_argument("--target-nice", type=int, default=0, metavar="N",
                        help="run the target under nice -n N (negative, as root: the target's "
                        "threads then get a CPU as soon as they can run, as on an idle machine, "
                        "so a stop is not delayed by other work waiting for the CPUs)")
    options = parser.parse_args()
    modes = ("none", "paused", "no-pause", "command")
    rates = {mode: [] for mode in modes}
    dumps = {mode: [] for mode in modes}
    for _ in range(options.rounds):
        for mode in modes:
            rate, figures = one_round(options.python, options.seconds, mode, options.target_nice)
            rates[mode].append(rate)
            dumps[mode].extend(figures)

    def ms(values):
        return f"{statistics.median(values) * 1e3:.2f}" if values else "-"

    def p95(values):
        rank = max(0, math.ceil(0.95 * len(values)) - 1)  # nearest rank
        return f"{sorted(values)[rank] * 1e3:.2f}" if values else "-"

    base = statistics.median(rates["none"])
    version = python_version(options.python)
    nice = f" (nice {options.target_nice})" if options.target_nice else ""
    print(f"CPython {version} target{nice}, {platform.machine()}, {os.cpu_count()} CPUs, load "
          f"average {os.getloadavg()[0]:.1f}; {options.rounds} rounds of {options.seconds:g} s "
          "per mode, medians\n")
    print("| reading at 10 Hz | target's loop rate | slowdown | dumps | one dump (median / p95) "
          "| threads stopped (median / p95) | reading (median) |")
    print("|---|---|---|---|---|---|---|")
    labels = {"none": "nothing", "paused": "heatline dump (threads stopped)",
              "no-pause": "heatline dump --no-pause", "command": "the `heatline dump` command"}
    for mode in modes:
        rate = statistics.median(rates[mode])
        walls = [d["wall_s"] for d in dumps[mode]]
        pauses = [d["pause_s"] for d in dumps[mode] if "pause_s" in d and d["pause_s"]]
        reads = [d["read_s"] for d in dumps[mode] if "read_s" in d]
        slowdown = "-" if mode == "none" else f"{(base / rate - 1) * 100:+.1f}%"
        print(f"| {labels[mode]} | {rate / 1e6:.2f} M/s | {slowdown} | {len(walls)} | "
              f"{ms(walls)} / {p95(walls)} ms | {ms(pauses)} / {p95(pauses)} ms | {ms(reads)} ms |")
    idle = idle_dumps(options.python, options.idle_dumps)
    pauses, walls = [p for p, _ in idle], [w for _, w in idle]
    print(f"\nA deadlocked process, every thread asleep, {len(idle)} dumps (load average "
          f"{os.getloadavg()[0]:.1f}): threads stopped {ms(pauses)} ms median, {p95(pauses)} ms "
          f"p95, {min(pauses) * 1e3:.2f} ms at least; one dump {ms(walls)} ms median.")
    if options.out:
        with open(options.out, "w", encoding="utf-8") as file:
            json.dump({"python": version, "rates": rates, "dumps": dumps, "idle": idle}, file,
                      indent=1)


if __name__ == "__main__":
    main()
