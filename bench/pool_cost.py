"""What a process pool of short tasks costs under heatline, and where that cost goes.

    python bench/pool_cost.py --runs 9            # the four runners, interleaved
    python bench/pool_cost.py --phases            # per-child start-up/end and merge times
    python bench/pool_cost.py --runs 9 --other /tmp/old/src   # also another heatline tree
    python bench/pool_cost.py --runs 9 --single   # the same tasks in the main process alone
    python bench/pool_cost.py --runs 9 --method spawn   # workers started by spawn (default fork)

The workload (this file run with --work) is `multiprocessing.Pool(2).map` of TASKS pure-Python
tasks of about TASK_MS each, with close() and join(). Runners: plain python, `heatline -q`,
`heatline -q --cpu-only`, `heatline -q --no-children`, run in turn (the order rotating each
round), and the medians over the rounds are printed of:
- wall: from spawning the command to its exit;
- cpu: user + system time of the whole tree (the runner's RUSAGE_CHILDREN after wait), split
  into the pool's workers (the program's own RUSAGE_CHILDREN once the pool is joined), the
  main process while the program runs (its RUSAGE_SELF at that point) and the rest, which is
  what the main process does after the program (heatline: stopping, merging, writing).

--phases runs the workload under heatline with heatline.children's functions timed in every
process (start-up of a fork child, writing its snapshot and the snapshot's size, the main
process's merge) and prints their medians.

Every run has bytecode caching on (PYTHONDONTWRITEBYTECODE is dropped from its environment), as
for an installed heatline: without .pyc files every heatline import compiles its source, in the
main process and in every spawned child. Each runner runs once, untimed, before the rounds.

heatline must be importable (installed, or on PYTHONPATH) for the heatline runners. --other
DIR adds the heatline runners once more with DIR first on PYTHONPATH (a checkout's src/ with
its _native built in place: `python setup.py build_ext --inplace`), in the same rounds.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

TASKS = 200
TASK_MS = 5.0
HERE = os.path.abspath(__file__)


def _cpu(usage: resource.struct_rusage) -> float:
    return usage.ru_utime + usage.ru_stime


# -- the workload ---------------------------------------------------------------------------


def task(n: int) -> int:
    total = 0
    for i in range(n):
        total += i * i % 7
    return total


def work(loops: int, report: str | None, single: bool = False, method: str = "fork") -> None:
    if single:  # the single-process figure for the same work
        for _ in range(TASKS):
            task(loops)
    else:
        import multiprocessing

        pool = multiprocessing.get_context(method).Pool(2)
        pool.map(task, [loops] * TASKS, chunksize=1)
        pool.close()
        pool.join()
    if report:
        with open(report, "w") as f:
            json.dump({"self": _cpu(resource.getrusage(resource.RUSAGE_SELF)),
                       "children": _cpu(resource.getrusage(resource.RUSAGE_CHILDREN))}, f)


def calibrate() -> int:
    """Loops of task() that take TASK_MS of CPU here (plain python)."""
    loops = 10000
    while True:
        start = time.process_time()
        task(loops)
        spent = time.process_time() - start
        if spent > 0.05:
            return max(1, int(loops * TASK_MS / 1000 / spent))
        loops *= 2


# -- the runners ----------------------------------------------------------------------------

RUNNERS = {
    "python": [],
    "heatline --cpu-only": ["-m", "heatline", "-q", "--cpu-only", "-o", "{out}"],
    "heatline": ["-m", "heatline", "-q", "-o", "{out}"],
    "heatline --no-children": ["-m", "heatline", "-q", "--no-children", "-o", "{out}"],
}


def run_once(runner: str, loops: int, scratch: str, other: str | None = None,
             single: bool = False, method: str = "fork") -> dict[str, float]:
    report = os.path.join(scratch, "report.json")
    out = os.path.join(scratch, "profile.json")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if runner.endswith(" (other)"):
        runner = runner[: -len(" (other)")]
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [other, os.environ.get("PYTHONPATH")]))
    prefix = [a.replace("{out}", out) for a in RUNNERS[runner]]
    command = [sys.executable, *prefix, HERE, "--work", str(loops), "--report", report,
               "--method", method, *(["--single"] if single else [])]
    before = _cpu(resource.getrusage(resource.RUSAGE_CHILDREN))
    start = time.perf_counter()
    subprocess.run(command, check=True, env=env)
    wall = time.perf_counter() - start
    total = _cpu(resource.getrusage(resource.RUSAGE_CHILDREN)) - before
    with open(report) as f:
        parts = json.load(f)
    return {"wall": wall, "cpu": total, "workers": parts["children"],
            "main": parts["self"], "after": total - parts["children"] - parts["self"]}


def compare(runs: int, loops: int, other: str | None, single: bool, method: str) -> None:
    names = list(RUNNERS)
    if other:
        names += [f"{name} (other)" for name in names if name != "python"]
    results: dict[str, list[dict[str, float]]] = {name: [] for name in names}
    with tempfile.TemporaryDirectory() as scratch:
        for name in names:  # warm-up: page cache, .pyc files
            run_once(name, loops, scratch, other, single, method)
        for round_ in range(runs):
            order = names[round_ % len(names):] + names[:round_ % len(names)]
            for name in order:
                results[name].append(run_once(name, loops, scratch, other, single, method))
    load = os.getloadavg()
    where = "in the main process alone" if single else f"Pool(2), {method}"
    print(f"{TASKS} tasks x {TASK_MS:g} ms ({loops} loops), {where}, {runs} interleaved rounds; "
          f"load average at the end {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
          + (f"; (other): heatline from {other}" if other else ""))
    base = {key: statistics.median(r[key] for r in results["python"])
            for key in ("wall", "cpu")}
    print(f"{'runner':32} {'wall s':>7} {'ratio':>6} {'cpu s':>7} {'ratio':>6} "
          f"{'workers':>8} {'main':>6} {'after':>6}")
    for name in names:
        med = {key: statistics.median(r[key] for r in results[name]) for key in results[name][0]}
        print(f"{name:32} {med['wall']:7.3f} {med['wall'] / base['wall']:6.3f} "
              f"{med['cpu']:7.3f} {med['cpu'] / base['cpu']:6.3f} {med['workers']:8.3f} "
              f"{med['main']:6.3f} {med['after']:6.3f}")


# -- the phases -----------------------------------------------------------------------------

PHASES_HOOK = '''
import os, sys, time
_record = os.environ.pop("POOL_COST_PHASES")
from heatline import children as _c

def _log(name, seconds, size=0):
    with open(_record, "a") as f:
        f.write(f"{name} {os.getpid()} {seconds:.6f} {size}\\n")

def _timed(name, function):
    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            _log(name, time.perf_counter() - start)
    return wrapper

_c.start_child = _timed("start_child", _c.start_child)
_c.collect = _timed("collect", _c.collect)
_real_write = _c._ChildFinisher._write
def _write(self):
    start = time.perf_counter()
    _real_write(self)
    spent = time.perf_counter() - start
    _log("write", spent, os.path.getsize(os.path.join(self.carrier.config["dir"], self.token + ".prof")))
_c._ChildFinisher._write = _write
'''


def phases(runs: int, loops: int, other: str | None) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        hook = os.path.join(scratch, "phases_hook.py")
        with open(hook, "w") as f:
            f.write(PHASES_HOOK)
        record = os.path.join(scratch, "phases.txt")
        out = os.path.join(scratch, "profile.json")
        for _ in range(runs):
            # The hook runs as the program's first lines; then the workload.
            program = os.path.join(scratch, "program.py")
            with open(program, "w") as f:
                f.write(f"exec(open({hook!r}).read())\n"
                        f"import sys; sys.path.insert(0, {os.path.dirname(HERE)!r})\n"
                        f"import pool_cost\npool_cost.work({loops}, None)\n")
            env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
            env["POOL_COST_PHASES"] = record
            if other:
                env["PYTHONPATH"] = other
            subprocess.run([sys.executable, "-m", "heatline", "-q", "-o", out, program],
                           check=True, env=env)
        rows: dict[str, list[tuple[float, int]]] = {}
        with open(record) as f:
            for line in f:
                name, _, seconds, size = line.split()
                rows.setdefault(name, []).append((float(seconds), int(size)))
    print(f"{runs} runs of the workload under heatline{' from ' + other if other else ''}; "
          "medians over all calls "
          f"(load average {os.getloadavg()[0]:.2f})")
    for name, values in rows.items():
        times = [v[0] * 1000 for v in values]
        sizes = [v[1] for v in values]
        extra = f", snapshot {statistics.median(sizes) / 1024:.1f} KiB" if any(sizes) else ""
        print(f"  {name:12} {len(values):4} calls, median {statistics.median(times):7.2f} ms, "
              f"max {max(times):7.2f} ms{extra}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=int, metavar="LOOPS", help="run the workload itself")
    parser.add_argument("--report", help="with --work: write the workload's rusage here")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--phases", action="store_true")
    # Not forkserver: its workers are the fork server's children, whose CPU no rusage of this
    # tree counts (the server outlives the program).
    parser.add_argument("--method", default="fork", choices=("fork", "spawn"),
                        help="the pool's start method")
    parser.add_argument("--single", action="store_true", help="no pool: the tasks in the main "
                        "process (with --work too)")
    parser.add_argument("--other", metavar="DIR", help="also heatline from DIR (see above)")
    parser.add_argument("--loops", type=int, help="task() loops (default: TASK_MS of CPU here)")
    args = parser.parse_args()
    if args.work is not None:
        work(args.work, args.report, args.single, args.method)
        return
    loops = args.loops or calibrate()
    if args.phases:
        phases(args.runs, loops, args.other)
    else:
        compare(args.runs, loops, args.other, args.single, args.method)


if __name__ == "__main__":
    main()
