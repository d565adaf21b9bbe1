"""Overhead: median wall-time ratio of `heatline prog` (full profile: CPU, memory, copies) and
`heatline --cpu-only prog` to `python prog`.

Runs every workload N times (default 7) under each runner, interleaved (plain, heatline,
[peers...], plain, heatline, ...) so that drifts in machine speed hit all runners alike, and
prints the median wall time of each and its ratio to plain Python. Peers (py-spy, scalene,
pyinstrument) are measured too when they are installed. Usage:

    python bench/overhead.py [--runs N] [--json FILE] [--render docs/overhead.md]

--json writes the raw results (with the machine, Python version and date); --render FILE
replaces the part of FILE between the markers <!-- workloads:begin --> and
<!-- workloads:end --> with a table rendered from this run, so no figure is typed by hand.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from heatbench.measure import precompile_heatline  # noqa: E402
WORKLOADS = ["pure_python", "alloc_python", "numpy_heavy"]


def runners():
    py = sys.executable
    out = tempfile.mkdtemp(prefix="heatline-bench-")
    found = {
        "python": lambda w: [py, os.path.join(HERE, "workloads.py"), w],
        "heatline --cpu-only": lambda w: [py, "-m", "heatline", "--cpu-only", "-q", "-o",
                                          os.path.join(out, "c.json"),
                                          os.path.join(HERE, "workloads.py"), w],
        "heatline": lambda w: [py, "-m", "heatline", "-q", "-o", os.path.join(out, "h.json"),
                               os.path.join(HERE, "workloads.py"), w],
    }
    if shutil.which("py-spy"):
        found["py-spy"] = lambda w: ["py-spy", "record", "-r", "100", "-o", os.path.join(out, "p.txt"),
                                     "-f", "raw", "--", py, os.path.join(HERE, "workloads.py"), w]
    try:
        import scalene  # noqa: F401
        found["scalene --cpu"] = lambda w: [py, "-m", "scalene", "--cpu", "--cli", "--json",
                                            "--outfile", os.path.join(out, "s.json"), "--no-browser",
                                            os.path.join(HERE, "workloads.py"), "---", w]
    except ImportError:
        pass
    try:
        import pyinstrument  # noqa: F401
        found["pyinstrument"] = lambda w: [py, "-m", "pyinstrument", "-o", os.path.join(out, "i.txt"),
                                           os.path.join(HERE, "workloads.py"), w]
    except ImportError:
        pass
    return found


def timed(command):
    start = time.perf_counter()
    result = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    elapsed = time.perf_counter() - start
    return elapsed if result.returncode == 0 else None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--json")
    parser.add_argument("--render", metavar="DOC")
    parser.add_argument("--workloads", default=",".join(WORKLOADS))
    args = parser.parse_args()
    table = runners()
    precompile_heatline(sys.executable)
    results = {}
    for workload in args.workloads.split(","):
        times = {name: [] for name in table}
        for _ in range(args.runs):
            for name, command in table.items():
                times[name].append(timed(command(workload)))  # None: failed
        plain = times["python"]
        base = statistics.median(t for t in plain if t is not None)
        results[workload] = {}
        print(f"\n{workload} ({args.runs} interleaved runs, median wall seconds; "
              "in brackets the quartiles of the per-round ratios)")
        for name, runs in times.items():
            values = [t for t in runs if t is not None]
            if not values:
                print(f"  {name:16s} failed")
                continue
            median = statistics.median(values)
            # Each run over the plain run of the same round: how much the machine's drift
            # and noise move the ratio.
            paired = [t / p for t, p in zip(runs, plain) if t is not None and p is not None]
            spread = statistics.quantiles(paired, n=4)[::2] if len(paired) >= 2 else [None, None]
            results[workload][name] = {"median_s": median, "ratio": median / base, "runs": values,
                                       "round_ratio_quartiles": spread}
            quartiles = f"({spread[0]:.3f}-{spread[1]:.3f})" if spread[0] is not None else ""
            print(f"  {name:16s} {median:7.3f} s   x{median / base:.3f} {quartiles}")
    report = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "python": sys.version.split()[0],
        "machine": f"{os.cpu_count()} CPUs, {os.uname().machine}, Linux {os.uname().release}",
        "runs": args.runs,
        "results": results,
    }
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    if args.render:
        render(report, args.render)


BEGIN, END = "<!-- workloads:begin -->", "<!-- workloads:end -->"


def _cell(entry):
    low, high = entry.get("round_ratio_quartiles") or (None, None)
    spread = f" ({low:.2f}-{high:.2f})" if low is not None else ""
    return f"{entry['ratio']:.3f}x{spread}"


def render(report, path):
    """Write the run's table between the workload markers of the document at path."""
    names = [name for name in next(iter(report["results"].values()))]
    lines = [
        f"Measured {report['date']} on {report['machine']}, Python {report['python']}, "
        f"{report['runs']} interleaved runs per runner; median wall time ÷ plain Python's "
        "(each run includes interpreter start-up and, for heatline, writing the profile). "
        "In brackets: the lower and upper quartiles of the per-round ratios (each run over the "
        "plain run of its round), which show how much this machine's noise moves the figure.",
        "",
        "| workload | " + " | ".join(name for name in names[1:]) + " |",
        "|---|" + "---|" * (len(names) - 1),
    ]
    for workload, row in report["results"].items():
        cells = [_cell(row[name]) if name in row else "failed" for name in names[1:]]
        plain = row["python"]["median_s"]
        lines.append(f"| {workload} ({plain:.2f} s plain) | " + " | ".join(cells) + " |")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text[:start] + "\n" + "\n".join(lines) + "\n" + text[end:])


if __name__ == "__main__":
    main()
