"""How long `heatline dump PID` takes, as a user sees it (the whole command, the interpreter's
start-up included), against `py-spy dump --pid PID` on the same process.

    python bench/dump_latency.py [--rounds 21] [--py-spy PATH] [--out JSON]
    python bench/dump_latency.py --render JSON    # the table into docs/design-live.md

The target is bench/busy_target.py's (its main thread counting in a loop, two more threads
asleep), started once and read by every command in turn, the order turning each round, so the
commands share the machine's state. Per command: the wall time from starting it to its exit,
and its CPU time (user + system, the kernel's account of the child). The commands:

- `heatline dump PID` (the console script pip installs next to this python), and
  `python -m heatline dump PID`; both stop the target's threads while reading, as py-spy does;
- `py-spy dump --pid PID` (--py-spy, else `py-spy` next to this python or on PATH; the row is
  left out when there is none);
- `python -c pass` and `python -c "import re"`: where a Python command's time goes before it
  does anything (the interpreter's start-up; pip's console-script wrapper imports re).

heatline's own reading (the threads stopped, the interpreter's state read) is taken from
`heatline dump --json`'s pause_ms and read_ms, one more run per round. Byte code is written and
used as an installed package's would be (PYTHONDONTWRITEBYTECODE is cleared for the commands,
and a first untimed round writes it).
"""

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from busy_target import BUSY_TARGET, python_version  # noqa: E402

# The target lets any process of its user read it: under Yama's ptrace_scope 1 only a parent
# could, and the commands are its siblings.
PTRACER = ("import ctypes\n"
           "ctypes.CDLL(None).prctl(0x59616D61, ctypes.c_ulong(-1).value, 0, 0, 0)\n")


def commands(python, py_spy):
    """label -> argv (PID for the target's pid), in table order."""
    found = {}
    if py_spy:
        found["py-spy dump --pid PID"] = [py_spy, "dump", "--pid", "PID"]
    script = os.path.join(os.path.dirname(python), "heatline")
    if os.path.exists(script):
        found["heatline dump PID"] = [script, "dump", "PID"]
    found["python -m heatline dump PID"] = [python, "-m", "heatline", "dump", "PID"]
    found["python -c pass"] = [python, "-c", "pass"]
    found['python -c "import re"'] = [python, "-c", "import re"]
    return found


def timed(argv, env):
    """(wall seconds, CPU seconds) of one run of argv, its output discarded."""
    began = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - began
    child.returncode = os.waitstatus_to_exitcode(status)
    error = child.stderr.read().decode(errors="replace")
    child.stderr.close()
    if child.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({child.returncode}): {error.strip()}")
    return wall, usage.ru_utime + usage.ru_stime


def find_py_spy(given):
    if given:
        return given
    beside = os.path.join(os.path.dirname(sys.executable), "py-spy")
    return beside if os.path.exists(beside) else shutil.which("py-spy")


def py_spy_version(path):
    if not path:
        return None
    done = subprocess.run([path, "--version"], capture_output=True, text=True, check=False)
    return done.stdout.strip() or None


def measure(rounds, py_spy):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    target = subprocess.Popen([sys.executable, "-c", PTRACER + BUSY_TARGET, "3600"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert target.stdout.readline() == "ready\n"
        target.stdin.write("go\n")
        target.stdin.flush()
        pid = str(target.pid)
        table = {label: [a.replace("PID", pid) for a in argv]
                 for label, argv in commands(sys.executable, py_spy).items()}
        heatline = table.get("heatline dump PID", table["python -m heatline dump PID"])
        for argv in table.values():  # untimed: byte code written, files in the page cache
            timed(argv, env)
        runs = {label: [] for label in table}
        readings = []
        labels = list(table)
        for number in range(rounds):
            turn = number % len(labels)
            for label in labels[turn:] + labels[:turn]:
                runs[label].append(timed(table[label], env))
            done = subprocess.run([*heatline[:-1], "--json", pid], capture_output=True,
                                  text=True, env=env, check=True)
            document = json.loads(done.stdout)
            readings.append((document["pause_ms"], document["read_ms"]))
    finally:
        target.kill()
        target.wait()
    return {
        "python": python_version(sys.executable),
        "py_spy": py_spy_version(py_spy),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "load_average": os.getloadavg()[0],
        "rounds": rounds,
        "runs": {label: {"wall_s": [w for w, _ in values], "cpu_s": [c for _, c in values]}
                 for label, values in runs.items()},
        "pause_ms": [p for p, _ in readings],
        "read_ms": [r for _, r in readings],
    }


def render(results, source=None):
    from render import _table

    runs = results["runs"]
    spy = runs.get("py-spy dump --pid PID")
    base = statistics.median(spy["wall_s"]) if spy else None
    rows = []
    for label, values in runs.items():
        wall = statistics.median(values["wall_s"])
        rows.append([f"`{label}`", f"{wall * 1e3:.1f}", f"{min(values['wall_s']) * 1e3:.1f}",
                     f"{statistics.median(values['cpu_s']) * 1e3:.1f}",
                     f"{wall / base:.2f}x" if base else "-"])
    spy_name = results["py_spy"] or "py-spy: not installed"
    lines = [f"CPython {results['python']} (target and heatline), {spy_name}, "
             f"{results['machine']}, {results['cpus']} CPUs, load average "
             f"{results['load_average']:.1f}; {results['rounds']} interleaved rounds on one "
             "busy process (a counting main thread, two sleeping threads):", "",
             _table(["command", "median (ms)", "fastest (ms)", "CPU, median (ms)",
                     "median / py-spy's"], rows), "",
             f"heatline's reading within its command: threads stopped "
             f"{statistics.median(results['pause_ms']):.2f} ms, the interpreter's state read in "
             f"{statistics.median(results['read_ms']):.2f} ms (medians, from `--json`)."]
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--py-spy", help="the py-spy executable (default: beside this python, "
                        "else on PATH)")
    parser.add_argument("--out", help="also write the raw numbers to this JSON file")
    parser.add_argument("--render", metavar="JSON",
                        help="render a results file into docs/design-live.md")
    args = parser.parse_args(argv)
    if args.render:
        from render import splice

        with open(args.render, encoding="utf-8") as file:
            results = json.load(file)
        source = os.path.relpath(os.path.abspath(args.render), ROOT)
        path = os.path.join(ROOT, "docs", "design-live.md")
        with open(path, encoding="utf-8") as file:
            text = file.read()
        with open(path, "w", encoding="utf-8") as file:
            file.write(splice(text, render(results, source), source, "dump-latency"))
        return 0
    results = measure(args.rounds, find_py_spy(args.py_spy))
    if args.out:
        with open(args.out, "w", encoding="utf-8") as file:
            json.dump(results, file, indent=1)
            file.write("\n")
    print(render(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
