"""heatline's process tools against CPython 3.15's own (`python -m profiling.sampling`), on the
same running process, interleaved: how long `heatline dump` and `profiling.sampling dump -a`
take to answer, and how long a 1 s profile of a running process takes from the command's
start to its end with `heatline attach` (both ways in) and `profiling.sampling attach`.

    python bench/vs_builtin.py --out bench/results/vs-builtin-3.15.json   # run on 3.15
    python bench/vs_builtin.py --render bench/results/vs-builtin-3.15.json

Needs CPython 3.15+ with heatline installed (`make bench-versions` makes .venv-bench-3.15). The
target: a main thread and two workers running Python, the main thread at a safe point every
millisecond (so that sys.remote_exec can run); `--blocked-main` for one whose main thread waits
in a lock (heatline's agent then takes the attach). Rendered into docs/overhead.md
(`<!-- builtin:... -->`).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

TARGET = """
import ctypes, sys, threading, time
ctypes.CDLL(None).prctl(0x59616D61, ctypes.c_ulong(-1).value, 0, 0, 0)
def spin():
    total = 0
    while True:
        for i in range(20000):
            total += i * i
for name in ("worker-one", "worker-two"):
    threading.Thread(target=spin, name=name, daemon=True).start()
print("ready", flush=True)
if sys.argv[1] == "blocked":
    threading.Event().wait()
while True:
    sum(range(1000))
    time.sleep(0.001)
"""

WINDOW_S = 1  # profiling.sampling takes whole seconds


def _timed(command):
    begun = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    took = time.perf_counter() - begun
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)}: {done.stderr.strip()[-500:]}")
    return took, done


def measure(rounds):
    python = sys.executable
    commands = {
        "heatline dump": lambda pid: [python, "-m", "heatline", "dump", str(pid)],
        "profiling.sampling dump -a": lambda pid: [python, "-m", "profiling.sampling", "dump",
                                                   "-a", str(pid)],
    }
    out = tempfile.mkdtemp(prefix="heatline-vs-builtin-")
    attaches = {
        "heatline attach": lambda pid: [python, "-m", "heatline", "attach", str(pid),
                                        "--duration", str(WINDOW_S), "-q", "-o",
                                        os.path.join(out, "h.json")],
        "profiling.sampling attach -a": lambda pid: [
            python, "-m", "profiling.sampling", "attach", "-a", "-d", str(WINDOW_S), "--pstats",
            "--no-summary", "-o", os.path.join(out, "s.pstats"), str(pid)],
    }
    results = {"python": sys.version.split()[0], "rounds": rounds, "window_s": WINDOW_S,
               "targets": {}}
    for kind in ("running", "blocked"):
        target = subprocess.Popen([python, "-c", TARGET, kind], stdout=subprocess.PIPE,
                                  text=True)
        try:
            assert target.stdout.readline() == "ready\n"
            times = {name: [] for name in [*commands, *attaches]}
            attach_ms, ways = [], set()
            for _ in range(rounds):
                for name, command in {**commands, **attaches}.items():
                    took, done = _timed(command(target.pid))
                    times[name].append(took)
                    if name == "heatline attach":
                        first = done.stderr.splitlines()[0]
                        attach_ms.append(float(first.split(" in ")[1].split(" ms")[0]))
                        ways.add(first.split(" ms ")[1].split(";")[0])
            results["targets"][kind] = {
                "median_s": {name: statistics.median(v) for name, v in times.items()},
                "min_s": {name: min(v) for name, v in times.items()},
                "heatline_attach_ms_median": statistics.median(attach_ms),
                "heatline_ways_in": sorted(ways),
            }
        finally:
            target.kill()
            target.wait()
    return results


def render(results, source):
    sys.path.insert(0, HERE)
    from render import _table

    rows = []
    for kind, entry in results["targets"].items():
        for name, median in entry["median_s"].items():
            rows.append([kind, name, f"{median * 1e3:.0f}", f"{entry['min_s'][name] * 1e3:.0f}"])
    lines = [f"CPython {results['python']}, {results['rounds']} interleaved rounds on one running "
             "process per row group (`running`: its main thread runs Python; `blocked`: it waits "
             f"in a lock). The attach rows are whole commands for a {results['window_s']:g} s "
             "profile, start to end.", "",
             _table(["target", "command", "median (ms)", "fastest (ms)"], rows), ""]
    for kind, entry in results["targets"].items():
        lines.append(f"- `{kind}`: heatline attach came in {', '.join(entry['heatline_ways_in'])}"
                     f", {entry['heatline_attach_ms_median']:.0f} ms from its start to the "
                     "profile running (median).")
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="results JSON to write")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--render", metavar="JSON", help="render a results file into docs/")
    args = parser.parse_args(argv)
    if args.render:
        sys.path.insert(0, HERE)
        from render import splice

        with open(args.render) as f:
            results = json.load(f)
        source = os.path.relpath(os.path.abspath(args.render), ROOT)
        path = os.path.join(ROOT, "docs", "overhead.md")
        with open(path) as f:
            text = f.read()
        with open(path, "w") as f:
            f.write(splice(text, render(results, source), source, "builtin"))
        return 0
    if sys.version_info < (3, 15):
        parser.error("needs CPython 3.15+ (profiling.sampling)")
    results = measure(args.rounds)
    with open(args.out, "w") as f:
        json.dump(results, f, indent=1)
        f.write("\n")
    print(render(results, args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
