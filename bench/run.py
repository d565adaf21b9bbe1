"""heatline side by side with its peers: overhead and accuracy, written as JSON.

    python bench/run.py                 # full run: 10 benchmarks x 5 rounds, accuracy x 3
    python bench/run.py --quick         # 3 benchmarks x 2 rounds, accuracy x 1
    python bench/run.py --smoke         # plain + heatline on a tiny script (the test suite's)
    python bench/run.py --quick --children-only   # the multi-process part only
    python bench/run.py --benchmarks pure_python,alloc_python,numpy_heavy --tools heatline,heatline-cpu \
        --rounds 25 --skip-accuracy --skip-children      # heatline's own workloads
    python bench/run.py --children-only --skip-accuracy --skip-startup --phases --single \
        --tools heatline,heatline-cpu,heatline-nochildren --rounds 7   # what a pool costs (make bench-pool)
    python bench/run.py ... --other /tmp/before/src   # every heatline runner again, heatline from there

--other DIR adds, for every heatline runner selected, a copy named RUNNER@other that imports
heatline from DIR first (a checkout's src/ with its _native built in place: `python setup.py
build_ext --inplace`), run in the same interleaved rounds: a before/after comparison of any part.

Normally run by `make bench` / `make bench-quick`, which install heatline and the peers into
.venv-bench first and render the results into docs/ with bench/render.py. Runners that are not
installed (or cannot run here) are recorded as unavailable with the reason. See
docs/overhead.md and docs/accuracy.md for the method.
"""

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from heatbench import accuracy, children, measure, overhead, suite, tools  # noqa: E402

SCHEMA = "heatline-bench/1"


def _read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def machine_info():
    cpu = next((line.split(":", 1)[1].strip() for line in _read("/proc/cpuinfo").splitlines()
                if line.startswith("model name")), platform.processor())
    mem = next((int(line.split()[1]) for line in _read("/proc/meminfo").splitlines()
                if line.startswith("MemTotal:")), 0)
    return {
        "cpu_model": cpu,
        "cpus": os.cpu_count(),
        "memory_gib": round(mem / 1024 / 1024, 1),
        "kernel": platform.release(),
        "platform": platform.platform(),
    }


def loadavg():
    parts = _read("/proc/loadavg").split()
    return [float(p) for p in parts[:3]] if parts else None


def git_info(where=ROOT):
    def git(*args):
        try:
            return subprocess.run(["git", "-C", where, *args], capture_output=True, text=True,
                                  timeout=30).stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            return ""
    return {"commit": git("rev-parse", "HEAD"),
            "dirty_paths": git("status", "--porcelain", "--", "src" if where == ROOT else ".").splitlines()}


def _short(path):
    path = os.path.abspath(path)
    return os.path.relpath(path, ROOT) if path.startswith(ROOT + os.sep) else path


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="3 benchmarks, 2 rounds, 1 accuracy run")
    mode.add_argument("--smoke", action="store_true",
                      help="plain + heatline on a tiny script, 1 round, 1 small accuracy run")
    parser.add_argument("--rounds", type=int, help="overhead rounds (default 5; quick 2)")
    parser.add_argument("--accuracy-runs", type=int, help="runs per target (default 3; quick 1)")
    parser.add_argument("--benchmarks", help="comma-separated benchmark names")
    parser.add_argument("--tools", help="comma-separated runner names (python is always included)")
    parser.add_argument("--skip-overhead", action="store_true")
    parser.add_argument("--skip-accuracy", action="store_true",
                        help="no accuracy runs (single- and multi-process)")
    parser.add_argument("--children-only", action="store_true",
                        help="only the multi-process part (pool overhead, child start-up, pool "
                             "accuracy)")
    parser.add_argument("--skip-children", action="store_true",
                        help="no multi-process part (pool overhead, child start-up, pool accuracy)")
    for flag, meaning in (
            ("--skip-startup", "no child start-up measurement"),
            ("--single", "also the pool's tasks in one process (pool_single)"),
            ("--phases", "also time heatline's per-child phases (a fork child's start, its "
                         "snapshot's write, the merge)")):
        parser.add_argument(flag, action="store_true", help="in the multi-process part: " + meaning)
    parser.add_argument("--other", metavar="DIR",
                        help="also every selected heatline runner with heatline imported from DIR "
                             "(named RUNNER@other)")
    parser.add_argument("--heatline-interval", metavar="SECONDS",
                        help="heatline's --sampling-interval in every heatline run")
    parser.add_argument("--target-scale", type=float,
                        help="HEATLINE_TARGET_SCALE for the accuracy targets (default 1)")
    parser.add_argument("--quiet-wait", type=float, default=20.0,
                        help="before each run, wait up to this many seconds for the rest of the "
                             "machine to go quiet (default 20; 0: never wait; smoke: 0)")
    parser.add_argument("--out", required=True, help="results JSON file to write")
    parser.add_argument("--workdir", help="scratch directory (default: a temporary one)")
    args = parser.parse_args(argv)
    if args.other and not os.path.isdir(args.other):
        print(f"run.py: error: --other: {args.other} is not a directory", file=sys.stderr)
        return 2

    kind = "smoke" if args.smoke else "quick" if args.quick else "full"
    rounds = args.rounds or {"smoke": 1, "quick": 2, "full": 5}[kind]
    accuracy_runs = args.accuracy_runs or {"smoke": 1, "quick": 1, "full": 3}[kind]
    if args.benchmarks:
        bench_names = args.benchmarks.split(",")
    else:
        bench_names = {"smoke": ["smoke"], "quick": suite.QUICK, "full": list(suite.PYPERFORMANCE)}[kind]
    wanted = set(args.tools.split(",")) | {"python"} if args.tools else None
    if kind == "smoke" and wanted is None:
        wanted = {"python", "heatline", "heatline-cpu"}
    scale = args.target_scale if args.target_scale is not None else (0.1 if kind == "smoke" else None)

    def log(message):
        print(message, file=sys.stderr, flush=True)

    workdir = args.workdir or tempfile.mkdtemp(prefix="heatline-bench-")
    os.makedirs(workdir, exist_ok=True)
    ctx = tools.Context()
    ctx.workdir = workdir
    ctx.quiet_wait_s = 0.0 if kind == "smoke" else args.quiet_wait
    if args.heatline_interval:
        ctx.heatline_flags = ["--sampling-interval", args.heatline_interval]
    env = dict(os.environ)
    for name in ("FORCE_COLOR", "NO_COLOR", "COLUMNS", "HEATLINE_TRUTH", "HEATLINE_TARGET_SCALE"):
        env.pop(name, None)
    env["PYTHONHASHSEED"] = "0"
    if env.get("PYTHONPATH"):  # the runs' working directory is not ours
        env["PYTHONPATH"] = os.pathsep.join(os.path.abspath(p) for p in env["PYTHONPATH"].split(os.pathsep) if p)

    measure.precompile_heatline(sys.executable)
    if args.other:
        other_env = dict(env, PYTHONPATH=os.pathsep.join(
            filter(None, [os.path.abspath(args.other), env.get("PYTHONPATH")])))
        measure.precompile_heatline(sys.executable, other_env)
    started = time.time()
    results = {
        "schema": SCHEMA,
        "kind": kind,
        "started_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join([_short(sys.executable), "bench/run.py",
                             *(argv if argv is not None else sys.argv[1:])]),
        "machine": machine_info(),
        "python": {"version": platform.python_version(), "implementation": platform.python_implementation()},
        "git": git_info(),
        "loadavg_start": loadavg(),
        "tools": {},
    }
    candidates = [t for t in tools.TOOLS if wanted is None or t.name in wanted]
    if args.other:
        results["other"] = {"path": os.path.abspath(args.other),
                            "git": git_info(os.path.abspath(args.other))}
        candidates += [tools.other_tree(t, args.other, env) for t in candidates
                       if t.name.startswith("heatline")]
    selected = []
    for tool in candidates:
        available, reason, version = tool.probe(ctx)
        results["tools"][tool.name] = {
            "label": tool.label, "mode": tool.mode, "version": version,
            "available": available, "reason": reason, "splits_time": tool.split,
            "cpu_accuracy": tool.parse is not None,
        }
        if tool.name == "python":
            results["tools"][tool.name]["version"] = platform.python_version()
        if tool.name.startswith("heatline") and not version:  # run from the source tree
            version = subprocess.run([ctx.python, "-c", "import heatline; print(heatline.__version__)"],
                                     capture_output=True, text=True,
                                     env=dict(env, PYTHONPATH=getattr(tool, "pythonpath", None)
                                              or env.get("PYTHONPATH", ""))).stdout.strip() or None
            results["tools"][tool.name]["version"] = version
        if tool.name == "cProfile":
            results["tools"][tool.name]["version"] = f"stdlib {platform.python_version()}"
        log(f"{tool.name:14s} {version or '':10s} {'ok' if available else 'UNAVAILABLE: ' + reason}")
        if available:
            selected.append(tool)
    single = [t for t in selected if tools.base_name(t.name) not in children.ONLY_HERE]
    # The pyperformance benchmarks and heatline's own workloads are summarised apart.
    groups = {"overhead": [n for n in bench_names if n not in suite.WORKLOADS],
              "workloads": [n for n in bench_names if n in suite.WORKLOADS]}

    for part, names in groups.items():
        if args.skip_overhead or args.children_only or not names:
            continue
        benchmarks, problems = suite.prepare(names, workdir)
        log(f"{part}: {len(benchmarks)} benchmarks x {len(single)} runners x {rounds} rounds")
        result = overhead.run(ctx, single, benchmarks, rounds, workdir, env, log)
        result["config"] = {"rounds": rounds, "benchmarks": names, "problems": problems}
        results[part] = result
        results["loadavg_after_overhead"] = loadavg()

    if not args.skip_accuracy and not args.children_only:
        log(f"accuracy: {len(accuracy.CPU_TARGETS)} targets x {accuracy_runs} runs")
        result = accuracy.run(ctx, single, accuracy_runs, workdir, env, log, scale=scale)
        result["config"] = {"runs": accuracy_runs, "targets": accuracy.CPU_TARGETS,
                            "target_scale": scale if scale is not None else 1.0}
        results["accuracy"] = result
        log("memory accuracy")
        results["memory_accuracy"] = accuracy.memory_accuracy(ctx, single, accuracy_runs,
                                                              workdir, env, log, scale=scale)
        results["loadavg_end"] = loadavg()

    if not args.skip_children:
        multi = [t for t in selected if tools.base_name(t.name) in children.TOOLS]
        if kind == "smoke":  # cheap: the path is exercised, not the peers
            multi = [t for t in multi if tools.base_name(t.name) in ("python", "heatline")]
        part = {"tools": [t.name for t in multi], "loadavg_start": loadavg()}
        pools = children.prepare_pools(workdir, smoke=kind == "smoke", single=args.single)
        log(f"multi-process overhead: {len(pools)} pools x {len(multi)} runners x {rounds} rounds")
        part["overhead"] = overhead.run(ctx, multi, pools, rounds, workdir, env, log)
        part["overhead"]["config"] = {"rounds": rounds, "benchmarks": [p.name for p in pools]}
        if args.phases:
            log(f"heatline's per-child phases: {rounds} runs")
            part["phases"] = children.phases(ctx, multi, rounds, workdir, env, log,
                                             smoke=kind == "smoke")
        if not args.skip_startup:
            log("child start-up")
            counts = (3, 2) if kind == "smoke" else (children.STARTUP_EXEC, children.STARTUP_SPAWN)
            part["startup"] = children.startup(ctx, multi, rounds, workdir, env, log, *counts)
        if not args.skip_accuracy:
            log(f"multi-process accuracy: {children.TARGET} x {accuracy_runs} runs")
            part["accuracy"] = children.accuracy(ctx, multi, accuracy_runs, workdir, env, log,
                                                 rounds=2 if kind == "smoke" else 4)
        part["loadavg_end"] = loadavg()
        results["children"] = part

    results["duration_s"] = round(time.time() - started, 1)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(results, f, indent=1, sort_keys=False)
        f.write("\n")
    log(f"wrote {args.out} ({results['duration_s']:.0f} s)")
    if not args.workdir:
        import shutil
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
