"""The multi-process part: a pool of short tasks (overhead), the cost of starting a child
(start-up), and the ground-truth Pool target tests/targets/children_pool.py (accuracy), under
plain Python, heatline (which follows children by default), heatline --cpu-only, heatline
--no-children, Scalene (which follows multiprocessing children by default) and
`py-spy record --subprocesses`.

Overhead. The pool workloads are written as drivers into the work directory and measured by
overhead.run like every other benchmark. Their CPU time (measure.py: wait4's rusage of the
runner) covers the pool's workers too: every process of the tree is reaped by its parent
(multiprocessing joins its workers, the profiled program is reaped by the profiler), and wait4
counts the CPU of every waited-for descendant. Each driver also prints, once its pool is
joined, its own RUSAGE_CHILDREN (the workers) and RUSAGE_SELF (the main process so far), from
which overhead.run splits the tree's CPU by process. run.py --single adds pool_single: the same
tasks in the main process alone.

Phases (run.py --phases). The pool_fork driver, with PHASES_HOOK first, under each heatline
runner: heatline.run.follow's start of a fork child, its snapshot's write at the child's end and
the main process's merge, timed in every process.

Start-up. A driver starts STARTUP_EXEC `python -c pass` children (subprocess.run, one after
another) and STARTUP_SPAWN multiprocessing children with the spawn start method (Process.start
+ join of a function that returns at once), timing each, and prints the per-child times as
JSON. Run under each runner, interleaved over the rounds; the figure is the median per-child
time and its excess over plain Python's, which is what following a child costs at its start
and exit (for heatline: the hook that starts the profiler in the child, and the child's
snapshot written at exit and merged by the parent).

Accuracy. children_pool.py runs a Pool(2) whose workers execute `loop` (a pure-Python loop)
and measure their own busy time (CPU time plus time runnable but waiting for a CPU), summed
and printed by the parent as `busy_s`. Per runner and start method (fork, spawn):
- worker time: the time the runner charges to `loop`, in seconds (heatline: its python +
  native + system seconds; py-spy: its samples at 100 Hz, 0.01 s each; Scalene: its
  percentages of the run times the elapsed time it reports, an estimate because its
  percentages are of the whole run), against busy_s: the error in %;
- worker Python %: the share of `loop`'s time the runner calls Python (the truth: 100 %), for
  the runners that split time;
- parent's waiting line: the share of the `pool.map(python_work, ...)` line's time that the
  runner calls system (blocked) time, for the runners that split time (the truth: all of it,
  the parent is blocked in that line while the workers compute).
A runner whose output cannot give one of these has it recorded as unavailable with the reason.
"""

import json
import os
import statistics

from .accuracy import TARGETS_DIR, _fresh, _rotated_runs
from .measure import printed_json, run_measured, wait_quiet
from .suite import WORK_FUNCTION, Benchmark
from .tools import base_name

# The runners of this part; the others are single-process only and are not run here.
TOOLS = ["python", "heatline", "heatline-cpu", "heatline-nochildren", "scalene", "py-spy-sub"]
# Runners that only make sense with children (the single-process parts skip them).
ONLY_HERE = {"heatline-nochildren", "py-spy-sub"}

POOL_BODY = '''\
# Driver written by bench/heatbench/children.py: {work}.
import json
import multiprocessing
import resource


{work_function}

def cpu(who):
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


if __name__ == "__main__":
{body}
    # The program's own CPU split (overhead.py reads it): the workers, reaped by join(), and
    # the main process so far.
    print(json.dumps({{"workers_cpu_s": cpu(resource.RUSAGE_CHILDREN),
                      "main_cpu_s": cpu(resource.RUSAGE_SELF)}}))
'''
POOL_MAP = '''\
    pool = multiprocessing.get_context("{method}").Pool(2)
    pool.map(work, [{iterations}] * {tasks}, chunksize=1)
    pool.close()
    pool.join()
'''
SINGLE_LOOP = '''\
    for _ in range({tasks}):
        work({iterations})
'''

# name: (start method, or None for the same tasks in the main process alone; tasks, iterations
# per task); 100,000 iterations take about 5 ms here.
POOLS = {"pool_fork": ("fork", 200, 100_000), "pool_spawn": ("spawn", 200, 100_000)}
SINGLE = {"pool_single": (None, 200, 100_000)}  # run.py --single
SMOKE_POOLS = {"pool_fork": ("fork", 20, 10_000)}
SMOKE_SINGLE = {"pool_single": (None, 20, 10_000)}

STARTUP_BODY = '''\
# Driver written by bench/heatbench/children.py: per-child start-up time, in ms, as JSON.
import json
import multiprocessing
import subprocess
import sys
import time


def nothing():
    pass


if __name__ == "__main__":
    exec_ms, spawn_ms = [], []
    for _ in range({exec_count}):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        exec_ms.append((time.perf_counter() - start) * 1000)
    context = multiprocessing.get_context("spawn")
    for _ in range({spawn_count}):
        start = time.perf_counter()
        child = context.Process(target=nothing)
        child.start()
        child.join()
        spawn_ms.append((time.perf_counter() - start) * 1000)
    print(json.dumps({{"exec_ms": exec_ms, "spawn_ms": spawn_ms}}))
'''

STARTUP_EXEC, STARTUP_SPAWN = 20, 10
METHODS = ["fork", "spawn"]
TARGET = "children_pool.py"
WORKER = "loop"
WAIT_MARK = "the parent waits here"
KINDS = ("python_s", "native_s", "system_s")


def _pool_source(work, method, tasks, iterations, prefix=""):
    body = (POOL_MAP.format(method=method, tasks=tasks, iterations=iterations) if method
            else SINGLE_LOOP.format(tasks=tasks, iterations=iterations))
    return prefix + POOL_BODY.format(work=work, body=body.rstrip("\n"),
                                     work_function=WORK_FUNCTION)


def prepare_pools(workdir, smoke=False, single=False):
    """The pool workloads (with single: also the same tasks in one process). Each reports its
    own CPU split, which overhead.run records (Benchmark.reports)."""
    pools = dict(SMOKE_POOLS if smoke else POOLS)
    if single:
        pools.update(SMOKE_SINGLE if smoke else SINGLE)
    found = []
    for name, (method, tasks, iterations) in pools.items():
        directory = os.path.join(workdir, name)
        os.makedirs(directory, exist_ok=True)
        script = os.path.join(directory, f"run_{name}.py")
        work = (f"Pool(2) ({method}) maps {tasks} tasks of a {iterations:,}-iteration Python loop"
                if method else
                f"the same {tasks} tasks of a {iterations:,}-iteration Python loop, no pool")
        with open(script, "w") as f:
            f.write(_pool_source(work, method, tasks, iterations))
        bench = Benchmark(name, script, [], work)
        bench.reports = True
        found.append(bench)
    return found


# ------------------------------------------------------------------ start-up


def startup(ctx, tools, rounds, workdir, env, log, exec_count=STARTUP_EXEC,
            spawn_count=STARTUP_SPAWN, timeout_s=300.0):
    directory = os.path.join(workdir, "startup")
    os.makedirs(directory, exist_ok=True)
    script = os.path.join(directory, "run_startup.py")
    with open(script, "w") as f:
        f.write(STARTUP_BODY.format(exec_count=exec_count, spawn_count=spawn_count))
    out = os.path.join(workdir, "out")
    stdout = os.path.join(workdir, "startup.out")
    runs = {t.name: {"exec_ms": [], "spawn_ms": []} for t in tools}
    failed = {}
    for r in range(rounds):
        order = tools[r % len(tools):] + tools[:r % len(tools)]
        line = []
        for tool in order:
            if tool.name in failed:
                continue
            wait_quiet(ctx.quiet_wait_s)
            result = run_measured(tool.command(ctx, script, [], out), cwd=_fresh(out), env=env,
                                  timeout_s=timeout_s, stdout_path=stdout)
            try:
                if not result["ok"]:
                    raise ValueError(result.get("error", "failed"))
                times = printed_json(stdout)
            except (ValueError, OSError) as e:
                failed[tool.name] = str(e)
                line.append(f"{tool.name}=FAILED")
                continue
            for key in ("exec_ms", "spawn_ms"):
                runs[tool.name][key].extend(times[key])
            line.append(f"{tool.name}={statistics.median(times['exec_ms']):.0f}/"
                        f"{statistics.median(times['spawn_ms']):.0f}ms")
        log(f"  start-up round {r + 1}/{rounds}: " + " ".join(line))
    summary = {}
    base = runs.get("python", {})
    for tool in tools:
        row = {}
        if tool.name in failed:
            row = {"status": "failed", "reason": failed[tool.name]}
        else:
            row["status"] = "ok"
            for key in ("exec_ms", "spawn_ms"):
                values = runs[tool.name][key]
                row[key] = round(statistics.median(values), 2) if values else None
                if values and base.get(key):
                    row[key.replace("_ms", "_extra_ms")] = round(
                        statistics.median(values) - statistics.median(base[key]), 2)
        summary[tool.name] = row
    return {"runs": runs, "summary": summary,
            "config": {"rounds": rounds, "exec_children": exec_count, "spawn_children": spawn_count}}


# ------------------------------------------------------------------ phases

# Prepended to the pool_fork driver (run.py --phases): times heatline.run.follow's start of a
# fork child, its snapshot's write (and size) at the child's end, and the main process's
# merge, in every process, into the file $HEATBENCH_PHASES names.
PHASES_HOOK = """\
import os as _os
import time as _time

from heatline.run import collect as _collect
from heatline.run import follow as _follow

_record = _os.environ.pop("HEATBENCH_PHASES")


def _log(name, seconds, size=0):
    with open(_record, "a") as f:
        f.write(f"{name} {_os.getpid()} {seconds:.6f} {size}\\n")


def _timed(name, function):
    def timed(*args, **kwargs):
        start = _time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            _log(name, _time.perf_counter() - start)
    return timed


def _timed_write(write):
    def timed(self):
        start = _time.perf_counter()
        write(self)
        spent = _time.perf_counter() - start
        _log("write", spent, _os.path.getsize(
            _os.path.join(self.carrier.config["dir"], self.token + ".prof")))
    return timed


_follow.start_child = _timed("start_child", _follow.start_child)
_collect.collect = _timed("collect", _collect.collect)
_follow.ChildFinisher._write = _timed_write(_follow.ChildFinisher._write)
"""
PHASE_ROWS = {"start_child": "a fork child's start (`start_child`)",
              "write": "a child's end: writing its snapshot",
              "collect": "main process: merging the children (`collect`)"}


def phases(ctx, tools, runs, workdir, env, log, smoke=False, timeout_s=300.0):
    """Runs of the pool_fork driver under each heatline runner (`heatline`, and its other
    tree's copy) with PHASES_HOOK; per runner and phase: calls, median and max ms, and the
    median snapshot size."""
    tools = [t for t in tools if base_name(t.name) == "heatline"]
    method, tasks, iterations = (SMOKE_POOLS if smoke else POOLS)["pool_fork"]
    directory = os.path.join(workdir, "phases")
    os.makedirs(directory, exist_ok=True)
    script = os.path.join(directory, "run_phases.py")
    with open(script, "w") as f:
        f.write(_pool_source("pool_fork with heatline's phases timed", method, tasks, iterations,
                             prefix=PHASES_HOOK + "\n"))
    out = os.path.join(workdir, "out")
    results = {}
    for tool in tools:
        record = os.path.join(directory, f"{tool.name}.txt")
        if os.path.exists(record):
            os.unlink(record)
        error = None
        for r in range(runs):
            wait_quiet(ctx.quiet_wait_s)
            result = run_measured(tool.command(ctx, script, [], out), cwd=_fresh(out),
                                  env=dict(env, HEATBENCH_PHASES=record), timeout_s=timeout_s)
            if not result["ok"]:
                error = result.get("error", "failed")
                break
        rows = {}
        if os.path.exists(record):
            with open(record) as f:
                for line in f:
                    name, _pid, seconds, size = line.split()
                    rows.setdefault(name, []).append((float(seconds) * 1000, int(size)))
        if error or not rows:
            results[tool.name] = {"status": "failed", "reason": error or "no phase was timed"}
            log(f"  phases {tool.name}: FAILED")
            continue
        summary = {"status": "ok"}
        for name, values in rows.items():
            times, sizes = [v[0] for v in values], [v[1] for v in values]
            summary[name] = {"calls": len(values), "median_ms": round(statistics.median(times), 2),
                             "max_ms": round(max(times), 2)}
            if any(sizes):
                summary[name]["median_kib"] = round(statistics.median(sizes) / 1024, 1)
        results[tool.name] = summary
        log(f"  phases {tool.name}: " + " ".join(
            f"{n}={summary[n]['median_ms']:.1f}ms" for n in rows))
    return {"summary": results, "config": {"runs": runs, "tasks": tasks,
                                           "iterations": iterations}}


# ------------------------------------------------------------------ accuracy


def _wait_line():
    with open(os.path.join(TARGETS_DIR, TARGET)) as f:
        for number, text in enumerate(f, 1):
            if WAIT_MARK in text:
                return number
    raise RuntimeError(f"{TARGET} has no line marked '{WAIT_MARK}'")


def _split_pct(row):
    total = sum(row.get(k, 0.0) for k in KINDS)
    return {k: round(100.0 * row.get(k, 0.0) / total, 2) for k in KINDS} if total > 0 else None


def measured_heatline(out, wait_line):
    with open(os.path.join(out, "profile.json")) as f:
        profile = json.load(f)
    worker, waiting = {k: 0.0 for k in KINDS}, {k: 0.0 for k in KINDS}
    for path, entry in profile["files"].items():
        if os.path.basename(path) != TARGET:
            continue
        for fn in entry["functions"]:
            if fn["qualname"] == WORKER:
                for k in KINDS:
                    worker[k] += fn[k]
        for line in entry["lines"]:
            if line["line"] == wait_line:
                for k in KINDS:
                    waiting[k] += line[k]
    return {"worker_s": sum(worker.values()), "worker_split": _split_pct(worker),
            "wait_split": _split_pct(waiting),
            "processes": len(profile.get("processes") or [])}


def measured_scalene(out, wait_line):
    with open(os.path.join(out, "profile.json")) as f:
        profile = json.load(f)
    names = {"n_cpu_percent_python": "python_s", "n_cpu_percent_c": "native_s",
             "n_sys_percent": "system_s"}
    worker, waiting = {k: 0.0 for k in KINDS}, {k: 0.0 for k in KINDS}
    for path, entry in profile.get("files", {}).items():
        if os.path.basename(path) != TARGET:
            continue
        for fn in entry.get("functions", []):
            if fn.get("line", "").strip() == WORKER:
                for theirs, ours in names.items():
                    worker[ours] += fn.get(theirs, 0.0)
        for line in entry.get("lines", []):
            if line.get("lineno") == wait_line:
                for theirs, ours in names.items():
                    waiting[ours] += line.get(theirs, 0.0)
    elapsed = profile.get("elapsed_time_sec") or 0.0
    return {"worker_s": sum(worker.values()) / 100.0 * elapsed,
            "worker_split": _split_pct(worker), "wait_split": _split_pct(waiting)}


PY_SPY_HZ = 100  # py-spy record's default rate, which the runner uses


def measured_py_spy(out, wait_line):
    samples = 0
    with open(os.path.join(out, "profile.txt")) as f:
        for line in f:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            if not count.isdigit():
                continue
            innermost = stack.split(";")[-1]
            if innermost.startswith(f"{WORKER} (") and f"{TARGET}:" in innermost:
                samples += int(count)
    return {"worker_s": samples / PY_SPY_HZ, "worker_split": None, "wait_split": None,
            "no_split": "py-spy's output has no Python/native/system split (its samples do not "
                        "say whether a thread was running or blocked)"}


MEASURED = {"heatline": measured_heatline, "heatline-cpu": measured_heatline,
            "heatline-nochildren": measured_heatline, "scalene": measured_scalene,
            "py-spy-sub": measured_py_spy}


def accuracy(ctx, tools, runs, workdir, env, log, rounds=4, timeout_s=180.0):
    tools = [t for t in tools if base_name(t.name) in MEASURED]
    wait_line = _wait_line()
    out = os.path.join(workdir, "out")
    stdout = os.path.join(workdir, "children_pool.out")
    script = os.path.join(TARGETS_DIR, TARGET)
    results = {}
    for method in METHODS:
        entry = results[method] = {"runs": {t.name: [] for t in tools}, "failed": {}}

        def command(tool, ctx_, script_, targets, out_, method=method):
            return tool.command(ctx_, script_, targets, out_) + [method, str(rounds)]

        def score(tool, _truth):
            truth = printed_json(stdout)
            got = MEASURED[base_name(tool.name)](out, wait_line)
            busy = truth["busy_s"]
            got["busy_s"] = round(busy, 4)
            got["worker_s"] = round(got["worker_s"], 4)
            got["worker_error_pct"] = round(100.0 * (got["worker_s"] - busy) / busy, 2) if busy else None
            return got

        _rotated_runs(ctx, tools, entry, script, env, out, None, runs, timeout_s, log,
                      f"{TARGET} {method}", score,
                      lambda rec: f"{rec['worker_error_pct']:+.0f}%",
                      command=command, stdout_path=stdout)
        entry["summary"] = {}
        for tool in tools:
            ok = [r for r in entry["runs"][tool.name] if r.get("ok")]
            if not ok:
                entry["summary"][tool.name] = {"status": "failed",
                                               "reason": entry["failed"].get(tool.name, "not run")}
                continue
            row = {"status": "ok", "runs_ok": len(ok)}
            for key in ("busy_s", "worker_s", "worker_error_pct"):
                row[key] = round(statistics.median(r[key] for r in ok), 2)
            for key in ("worker_split", "wait_split"):
                seen = [r[key] for r in ok if r.get(key)]
                row[key] = ({k: round(statistics.median(s[k] for s in seen), 1) for k in KINDS}
                            if seen else None)
            if ok[0].get("no_split"):
                row["no_split"] = ok[0]["no_split"]
            entry["summary"][tool.name] = row
    return {"targets": results, "config": {"runs": runs, "rounds": rounds, "wait_line": wait_line,
                                           "target": TARGET, "methods": METHODS}}
