"""What `heatline top` costs the process it watches.

    python bench/top_overhead.py [--rounds 5] [--seconds 3] [--python PYTHON]

A pure-Python busy loop (the target's main thread counting, two more threads asleep) runs for
--seconds while nothing reads it, while the `heatline top` command reads it at its default 100
readings a second, and at 1000 a second (its views written to a pipe, as with stdout not a
terminal); the modes take turns, --rounds times each, and medians are compared. top is started
first and has printed its first view (a pipe, read once; a few views fit in it) when the target's
timed loop starts, so its start-up is not counted. Two rates of the target: loops per wall second (what a user sees: it includes the
CPU that top takes from the target on a busy machine) and loops per CPU second of the target's
main thread (the reading's effect on the target itself: nothing stops it, so only caches and
memory traffic could slow it). top's own CPU time over the window is given too.

Prints a Markdown table (docs/design-live.md, "heatline top"); --out writes the raw numbers as JSON.
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys

from busy_target import BUSY_TARGET, python_version


TICK = os.sysconf("SC_CLK_TCK")


def _cpu_s(pid):
    """utime + stime of process pid, seconds (its threads included)."""
    with open(f"/proc/{pid}/stat", encoding="utf-8") as file:
        fields = file.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def one_round(python, seconds, interval, nice=0):
    """(loops per wall second, loops per CPU second, top's CPU seconds) for one round; interval
    0: nothing reads the target."""
    target = subprocess.Popen([python, "-c", BUSY_TARGET, str(seconds)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    assert target.stdout.readline() == "ready\n"
    top = None
    if interval:
        prefix = ["nice", "-n", str(nice)] if nice else []
        top = subprocess.Popen([*prefix, sys.executable, "-m", "heatline", "top",
                                "--sampling-interval", str(interval), str(target.pid)], stdout=subprocess.PIPE,
                               stdin=subprocess.DEVNULL)
        top.stdout.readline()  # its first view: started (on a loaded machine, seconds) and reading
        top_cpu = _cpu_s(top.pid)
    target.stdin.write("go\n")
    target.stdin.flush()
    count, cpu = target.communicate()[0].split()
    top_cpu_s = 0.0
    if top is not None:
        top_cpu_s = _cpu_s(top.pid) - top_cpu
        top.terminate()
        top.wait()
    return int(count) / seconds, int(count) / float(cpu), top_cpu_s


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--out", help="also write the raw numbers to this JSON file")
    parser.add_argument("--top-nice", type=int, default=0, metavar="N",
                        help="run heatline top under nice -n N")
    options = parser.parse_args()
    modes = (0, 0.01, 0.001)
    figures = {mode: [] for mode in modes}
    load_before = os.getloadavg()[0]
    for _ in range(options.rounds):
        for mode in modes:
            figures[mode].append(one_round(options.python, options.seconds, mode,
                                           options.top_nice))
    version = python_version(options.python)
    print(f"CPython {version} target, {platform.machine()}, {os.cpu_count()} CPUs, load average "
          f"{load_before:.1f} before, {os.getloadavg()[0]:.1f} after; {options.rounds} rounds of "
          f"{options.seconds:g} s per mode, medians\n")
    print("| watched by | loops per wall s | slowdown | loops per CPU s | slowdown | top's CPU |")
    print("|---|---|---|---|---|---|")
    base_wall = statistics.median(f[0] for f in figures[0])
    base_cpu = statistics.median(f[1] for f in figures[0])
    for mode in modes:
        wall = statistics.median(f[0] for f in figures[mode])
        cpu = statistics.median(f[1] for f in figures[mode])
        top_cpu = statistics.median(f[2] for f in figures[mode]) / options.seconds
        nice = f"nice -n {options.top_nice} " if options.top_nice else ""
        label = f"{nice}heatline top --sampling-interval {mode:g}" if mode else "nothing"
        slow_wall = f"{(base_wall / wall - 1) * 100:+.1f}%" if mode else "-"
        slow_cpu = f"{(base_cpu / cpu - 1) * 100:+.1f}%" if mode else "-"
        print(f"| {label} | {wall / 1e6:.2f} M | {slow_wall} | {cpu / 1e6:.2f} M | {slow_cpu} | "
              f"{top_cpu * 100:.1f}% of a CPU |" if mode else
              f"| {label} | {wall / 1e6:.2f} M | - | {cpu / 1e6:.2f} M | - | - |")
    if options.out:
        with open(options.out, "w", encoding="utf-8") as file:
            json.dump({"python": version, "figures": {str(k): v for k, v in figures.items()}},
                      file, indent=1)


if __name__ == "__main__":
    main()
