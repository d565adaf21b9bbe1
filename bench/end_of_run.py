"""The end of a run: how long heatline takes, once the program's last line has run, to stop,
build the profile, write it and exit, on a large program (the shape of
tests/integration/test_large_program.py: FILES modules of LINES executed lines each, all of
them sampled). Usage:

    python bench/end_of_run.py [--rounds N] [--other DIR] [--files 60] [--lines 4000]
    python bench/end_of_run.py --torch [--rounds N] [--other DIR]

--torch runs instead a program that imports torch and multiplies matrices for a second: a
small profile, but native samples in libtorch_cpu.so (whose symbol tables the end names them
from) and the million objects torch holds (which a garbage collection at the end walks).

The program's last line writes CLOCK_MONOTONIC and the process's CPU time into a file; the
harness reads the clock when the process has exited (wait4, whose rusage gives the process's
CPU time in all). The differences are the end of the run, in wall time and in CPU time:
interpreter shutdown for python, and heatline's stop, profile build, JSON write (-o, -q: no
report) and shutdown under heatline. Runners take turns round after round (the order rotating); the figures are medians.
--other DIR adds `heatline@other`: heatline imported from DIR (a tree's src/ with its _native
built in place) in the same rounds, a before/after comparison. heatline's modules (this
tree's and DIR's) are compiled to .pyc first, as an installed heatline's are.
"""

import argparse
import compileall
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(os.path.dirname(HERE), "src")

MAIN = """\
import os, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
mods = [__import__(f'mod{{m:02d}}') for m in range({files})]
for m in mods:
    m.work({calls})
with open({mark!r}, "w") as f:
    f.write(f"{{time.monotonic_ns()}} {{time.process_time()}}")
"""

TORCH_MAIN = """\
import time
import torch
a = torch.randn(500, 500)
start = time.perf_counter()
while time.perf_counter() - start < 1.0:
    b = torch.relu(a @ a).sum()
with open({mark!r}, "w") as f:
    f.write(f"{{time.monotonic_ns()}} {{time.process_time()}}")
"""


def write_torch_program(directory, mark):
    main = os.path.join(directory, "main.py")
    with open(main, "w") as f:
        f.write(TORCH_MAIN.format(mark=mark))
    return main


def write_program(directory, files, lines, calls, mark):
    for m in range(files):
        body = "".join(f"        x += {i}\n" for i in range(lines))
        with open(os.path.join(directory, f"mod{m:02d}.py"), "w") as f:
            f.write(f"def work(n):\n    x = 0\n    for _ in range(n):\n{body}    return x\n")
    main = os.path.join(directory, "main.py")
    with open(main, "w") as f:
        f.write(MAIN.format(files=files, calls=calls, mark=mark))
    # The program's modules compiled once, untimed, so that no run pays for it.
    compileall.compile_dir(directory, quiet=1)
    return main


def one_run(command, env, mark):
    if os.path.exists(mark):
        os.unlink(mark)
    start = time.monotonic_ns()
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    ended = time.monotonic_ns()
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise SystemExit(f"{command}: exit status {process.returncode}")
    with open(mark) as f:
        last_line, cpu_then = f.read().split()
    cpu = usage.ru_utime + usage.ru_stime
    return {"end_s": (ended - int(last_line)) / 1e9, "end_cpu_s": cpu - float(cpu_then),
            "wall_s": (ended - start) / 1e9, "cpu_s": cpu}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--files", type=int, default=60)
    parser.add_argument("--lines", type=int, default=4000)
    parser.add_argument("--calls", type=int, default=5, help="calls of each module's work()")
    parser.add_argument("--other", metavar="DIR", help="also heatline imported from DIR")
    parser.add_argument("--torch", action="store_true",
                        help="a second of torch matrix products instead of the large program")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="heatline-end-of-run-")
    mark = os.path.join(work, "last_line")
    if args.torch:
        main_py = write_torch_program(work, mark)
    else:
        main_py = write_program(work, args.files, args.lines, args.calls, mark)
    out = os.path.join(work, "profile.json")
    runners = {"python": ([sys.executable, main_py], None)}
    trees = {"heatline": SRC}
    if args.other:
        trees["heatline@other"] = os.path.abspath(args.other)
    for name, tree in trees.items():
        compileall.compile_dir(os.path.join(tree, "heatline"), quiet=1)
        runners[name] = ([sys.executable, "-m", "heatline", "-q", "-o", out, main_py], tree)
    names = list(runners)
    results = {name: [] for name in names}
    for r in range(args.rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        for name in order:
            command, tree = runners[name]
            env = dict(os.environ)
            if tree is not None:
                env["PYTHONPATH"] = tree + (os.pathsep + env["PYTHONPATH"]
                                            if env.get("PYTHONPATH") else "")
            results[name].append(one_run(command, env, mark))
        print(f"round {r + 1}/{args.rounds}: " + " ".join(
            f"{n}={results[n][-1]['end_s'] * 1000:.0f}ms" for n in names), file=sys.stderr)
    size = os.path.getsize(out) if os.path.exists(out) else 0
    shape = "torch matrix products" if args.torch else f"{args.files} files x {args.lines} lines"
    print(f"{shape}, {args.rounds} interleaved rounds, medians; "
          f"load average {os.getloadavg()[0]:.2f}; last profile {size / 1e6:.2f} MB")
    print(f"{'runner':16s} {'end of run (s)':>15s} {'its CPU (s)':>12s} {'wall (s)':>9s} "
          f"{'CPU (s)':>8s}")
    for name in names:
        rows = results[name]
        print(f"{name:16s} {statistics.median(r['end_s'] for r in rows):15.3f} "
              f"{statistics.median(r['end_cpu_s'] for r in rows):12.3f} "
              f"{statistics.median(r['wall_s'] for r in rows):9.3f} "
              f"{statistics.median(r['cpu_s'] for r in rows):8.3f}")


if __name__ == "__main__":
    main()
