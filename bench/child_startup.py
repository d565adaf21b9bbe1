"""What following a child costs at its start and end, per child, in wall time and in CPU time:
a driver starts EXEC `python -c pass` children (subprocess.run, one after another) and SPAWN
multiprocessing spawn children that do nothing, timing each, and reads each child's CPU time
from its RUSAGE_CHILDREN (the child's own CPU, which a loaded machine's waiting does not
inflate as it does the wall time). Usage:

    python bench/child_startup.py [--rounds N] [--other DIR] [--no-bytecode]

Runs the driver under python and `heatline -q` (and, with --other, under heatline imported
from DIR: a tree's src/ with its _native built in place), in interleaved rounds (the order
rotating); prints the medians over the rounds of each run's median per child, and the excess
over python's. heatline's modules are compiled to .pyc first, as an installed heatline's are;
--no-bytecode runs each tree from a copy without any (an editable install under
PYTHONDONTWRITEBYTECODE, where the children's start-up modules have no cached bytecode).
bench/run.py's multi-process part ("Child start-up" in docs/overhead.md) measures the wall
time beside the peers.
"""

import argparse
import compileall
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(os.path.dirname(HERE), "src")

DRIVER = """\
import json, multiprocessing, resource, statistics, subprocess, sys, time


def nothing():
    pass


def cpu_ms():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (usage.ru_utime + usage.ru_stime) * 1000


def timed(start_one):
    cpu, start = cpu_ms(), time.perf_counter()
    start_one()
    return (time.perf_counter() - start) * 1000, cpu_ms() - cpu


def spawned():
    child = multiprocessing.get_context("spawn").Process(target=nothing)
    child.start()
    child.join()


if __name__ == "__main__":
    runs = {{"exec": [timed(lambda: subprocess.run([sys.executable, "-c", "pass"], check=True))
                     for _ in range({exec_count})],
            "spawn": [timed(spawned) for _ in range({spawn_count})]}}
    print(json.dumps({{kind: [statistics.median(t[0] for t in times),
                             statistics.median(t[1] for t in times)]
                      for kind, times in runs.items()}}))
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--exec-children", type=int, default=20)
    parser.add_argument("--spawn-children", type=int, default=6)
    parser.add_argument("--other", metavar="DIR", help="also heatline imported from DIR")
    parser.add_argument("--no-bytecode", action="store_true",
                        help="heatline's trees copied without cached bytecode")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="heatline-child-startup-")
    driver = os.path.join(work, "driver.py")
    with open(driver, "w") as f:
        f.write(DRIVER.format(exec_count=args.exec_children, spawn_count=args.spawn_children))
    trees = {"heatline": SRC}
    if args.other:
        trees["heatline@other"] = os.path.abspath(args.other)
    runners = {"python": ([sys.executable, driver], None)}
    for name, tree in trees.items():
        if args.no_bytecode:
            copy = os.path.join(work, name.replace("@", "-"))
            shutil.copytree(tree, copy, ignore=shutil.ignore_patterns("__pycache__"))
            tree = copy
        else:
            compileall.compile_dir(os.path.join(tree, "heatline"), quiet=1)
        runners[name] = ([sys.executable, "-m", "heatline", "-q", "-o",
                          os.path.join(work, "profile.json"), driver], tree)
    env = dict(os.environ)
    if args.no_bytecode:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    names = list(runners)
    results = {name: {"exec": [], "spawn": []} for name in names}
    for r in range(args.rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            command, tree = runners[name]
            run_env = dict(env, PYTHONPATH=tree) if tree else env
            out = subprocess.run(command, env=run_env, capture_output=True, text=True, check=True)
            for kind, pair in json.loads(out.stdout.strip().splitlines()[-1]).items():
                results[name][kind].append(pair)
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
    print(f"{args.rounds} interleaved rounds, medians per child (ms); load average "
          f"{os.getloadavg()[0]:.2f}{'; no cached bytecode' if args.no_bytecode else ''}")
    print(f"{'runner':16s} {'python -c pass: wall':>21s} {'CPU':>13s}   "
          f"{'spawn child: wall':>18s} {'CPU':>13s}")
    base = {kind: [statistics.median(p[i] for p in results["python"][kind]) for i in (0, 1)]
            for kind in ("exec", "spawn")}
    for name in names:
        cells = []
        for kind in ("exec", "spawn"):
            for i in (0, 1):
                value = statistics.median(p[i] for p in results[name][kind])
                cells.append(f"{value:6.1f} ({value - base[kind][i]:+5.1f})")
        print(f"{name:16s} {cells[0]:>21s} {cells[1]:>13s}   {cells[2]:>18s} {cells[3]:>13s}")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
