"""Overhead: every benchmark under plain Python and under every runner, interleaved.

Order: for each round, for each benchmark, every runner once, the runners' order rotated by
one each round, so that slow drifts of the machine (another process, thermal state) hit every
runner alike. Each benchmark first gets one untimed plain run (warms the page cache and writes
the .pyc files). A runner that fails on a benchmark is recorded with its reason and not tried
again on that benchmark.

Per benchmark and runner: the median wall time and its ratio to plain Python's median; the
median CPU time (user + system, whole process tree) and its ratio; the median peak RSS of the
process tree (see measure.py) and its ratio; the median size of the output the runner left.
Per runner: the median of those ratios across the benchmarks it ran.

A benchmark whose program reports its own CPU split (Benchmark.reports: the pool workloads of
children.py print, once the pool is joined, the CPU of the workers it reaped and of the main
process so far) also gets, per run and as medians: workers_cpu_s, main_cpu_s (the main process
while the program runs) and after_cpu_s (the rest of the tree's CPU: the main process after the
program, which for heatline is its stop, merge and write, and any process of the profiler's
own).
"""

import os
import shutil
import statistics

from .measure import printed_json, run_measured, wait_quiet

SPLIT = ("workers_cpu_s", "main_cpu_s", "after_cpu_s")


def _dir_bytes(path):
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.path.getsize(os.path.join(root, name))
            except OSError:
                pass
    return total


def _fresh(path):
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


def run(ctx, tools, benchmarks, rounds, workdir, env, log, timeout_factor=30.0, min_timeout_s=60.0):
    out = os.path.join(workdir, "out")
    per_bench = {}
    for bench in benchmarks:
        warm = run_measured([ctx.python, bench.script], cwd=_fresh(out), env=env,
                            timeout_s=600)
        entry = per_bench[bench.name] = {
            "work": bench.work, "warmup_s": warm.get("wall_s"),
            "runs": {t.name: [] for t in tools}, "failed": {},
        }
        if not warm["ok"]:
            entry["failed"] = {t.name: "plain python failed: " + warm.get("error", "") for t in tools}
            log(f"  {bench.name}: plain run failed, skipped: {warm.get('error')}")
            continue
        entry["timeout_s"] = max(min_timeout_s, timeout_factor * warm["wall_s"])
        log(f"  {bench.name}: warm-up {warm['wall_s']:.2f} s")

    loads = []
    for r in range(rounds):
        loads.append(_loadavg())
        log(f"round {r + 1}/{rounds} (load average {loads[-1]})")
        order = tools[r % len(tools):] + tools[:r % len(tools)]
        for bench in benchmarks:
            entry = per_bench[bench.name]
            line = []
            for tool in order:
                if tool.name in entry["failed"]:
                    continue
                command = tool.command(ctx, bench.script, bench.targets, out)
                if command is None:
                    entry["failed"][tool.name] = "not applicable"
                    continue
                quiet = wait_quiet(ctx.quiet_wait_s)
                stdout = os.path.join(workdir, "program.out") if getattr(bench, "reports", False) else None
                result = run_measured(command, cwd=_fresh(out), env=env,
                                      timeout_s=entry["timeout_s"], stdout_path=stdout)
                result["others_cores_before"] = quiet
                result["output_bytes"] = _dir_bytes(out)
                if stdout and result["ok"]:
                    _add_split(result, stdout)
                entry["runs"][tool.name].append(result)
                if not result["ok"]:
                    error = result.get("error", "failed")
                    if error.startswith("timed out"):
                        error += f" (plain python: {entry['warmup_s']:.1f} s)"
                    entry["failed"][tool.name] = error
                    line.append(f"{tool.name}=FAILED")
                else:
                    line.append(f"{tool.name}={result['wall_s']:.2f}")
            log(f"  {bench.name}: " + " ".join(line))
    shutil.rmtree(out, ignore_errors=True)
    result = summarise(per_bench, [t.name for t in tools])
    result["loadavg_per_round"] = loads
    return result


def _add_split(result, stdout):
    try:
        parts = printed_json(stdout)
        workers, main = float(parts["workers_cpu_s"]), float(parts["main_cpu_s"])
    except (OSError, ValueError, KeyError, TypeError) as e:
        result["split_error"] = f"the program's CPU split is unreadable: {e}"
        return
    result.update(workers_cpu_s=round(workers, 4), main_cpu_s=round(main, 4),
                  after_cpu_s=round(result["cpu_s"] - workers - main, 4))


def _loadavg():
    try:
        with open("/proc/loadavg") as f:
            return float(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def _ratio(a, b):
    return a / b if a is not None and b else None


def summarise(per_bench, tool_names):
    """Adds each benchmark's "summary" and returns {"benchmarks", "per_tool"}."""
    for entry in per_bench.values():
        ok = {name: [r for r in runs if r.get("ok")] for name, runs in entry["runs"].items()}
        base = ok.get("python") or []
        base_wall = _median([r["wall_s"] for r in base])
        base_cpu = _median([r["cpu_s"] for r in base])
        base_rss = _median([r["peak_rss_kb"] for r in base])
        summary = {}
        for name in tool_names:
            runs = ok.get(name, [])
            failed = entry["failed"].get(name)
            row = {"runs_ok": len(runs), "runs_failed": len(entry["runs"].get(name, [])) - len(runs)}
            if failed == "not applicable":
                row["status"] = "not applicable"
            elif failed and not runs:
                row.update(status="failed", reason=failed)
            elif failed:
                # Failed in a later round after succeeding: the successful runs still count.
                row.update(status="ok", reason="some runs failed: " + failed)
            elif not runs:
                row["status"] = "not run"
            else:
                row["status"] = "ok"
            if runs:
                wall = _median([r["wall_s"] for r in runs])
                cpu = _median([r["cpu_s"] for r in runs])
                rss = _median([r["peak_rss_kb"] for r in runs])
                row.update(
                    median_wall_s=round(wall, 4), wall_ratio=_round(_ratio(wall, base_wall)),
                    median_cpu_s=round(cpu, 4), cpu_ratio=_round(_ratio(cpu, base_cpu)),
                    median_peak_rss_kb=rss, rss_ratio=_round(_ratio(rss, base_rss)),
                    median_output_bytes=_median([r["output_bytes"] for r in runs]),
                )
                for key in SPLIT:
                    value = _median([r.get(key) for r in runs])
                    if value is not None:
                        row["median_" + key] = round(value, 4)
            summary[name] = row
        entry["summary"] = summary

    per_tool = {}
    for name in tool_names:
        rows = [e["summary"][name] for e in per_bench.values()]
        good = [row for row in rows if row["status"] == "ok"]
        per_tool[name] = {
            "benchmarks_ok": len(good),
            "benchmarks_failed": sum(row["status"] == "failed" for row in rows),
            "benchmarks_not_applicable": sum(row["status"] == "not applicable" for row in rows),
            "median_wall_ratio": _round(_median([row["wall_ratio"] for row in good])),
            "median_cpu_ratio": _round(_median([row["cpu_ratio"] for row in good])),
            "median_rss_ratio": _round(_median([row["rss_ratio"] for row in good])),
            "max_wall_ratio": _round(max((row["wall_ratio"] for row in good if row["wall_ratio"]),
                                         default=None)),
            "median_output_bytes": _median([row["median_output_bytes"] for row in good]),
        }
    return {"benchmarks": per_bench, "per_tool": per_tool}


def _round(value, digits=3):
    return round(value, digits) if value is not None else None
