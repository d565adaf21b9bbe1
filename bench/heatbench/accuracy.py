"""Accuracy: the ground-truth programs of tests/targets/ under heatline and each peer that
reports time per function, compared with the truth each run measured itself.

The targets (tests/targets/_truth.py) time every phase function in the run being profiled and
write {qualname: {wall_s, cpu_s, python_s, native_s, system_s}} to $HEATLINE_TRUTH, so the
truth already includes whatever the profiler's own overhead did to the program.

One error measure for every tool:

- share error: for each truth function, its share of the time of all truth functions
  (100 * wall_s / sum of wall_s; thread time, so two busy threads count twice) against the
  tool's share (the tool's time for the function / its time for all truth functions; see
  tools.py for how each output is mapped to functions). A function the tool does not report
  counts as a share of 0. Reported per target: the mean and the maximum absolute error in
  percentage points over the functions (and over the runs).
- split error, for the tools that split time into Python / native / system (heatline,
  Scalene): for each function the tool reports, the absolute difference, in points, between its
  Python, native and system percentages of the function's time and the truth's. Mean and
  maximum over functions, kinds and runs.
"""

import json
import os
import shutil
import statistics

from .measure import run_measured, wait_quiet

KINDS = ("python_s", "native_s", "system_s")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TARGETS_DIR = os.path.join(ROOT, "tests", "targets")
CPU_TARGETS = ["main_thread.py", "threads.py"]


def compare(truth, measured, split):
    names = sorted(truth)
    want_total = sum(truth[n]["wall_s"] for n in names) or 1.0
    got = {n: measured.get(n, {}).get("total_s", 0.0) for n in names}
    got_total = sum(got.values())
    row = {"share_true": {}, "share_got": {}, "share_error": {}, "unseen": []}
    for n in names:
        want = 100.0 * truth[n]["wall_s"] / want_total
        have = 100.0 * got[n] / got_total if got_total > 0 else 0.0
        row["share_true"][n] = round(want, 3)
        row["share_got"][n] = round(have, 3)
        row["share_error"][n] = round(have - want, 3)
        if got[n] <= 0:
            row["unseen"].append(n)
    errors = [abs(e) for e in row["share_error"].values()]
    row["mean_share_error"] = round(statistics.mean(errors), 3)
    row["max_share_error"] = round(max(errors), 3)
    if split:
        row["split_true"], row["split_got"], row["split_error"] = {}, {}, {}
        split_errors = []
        for n in names:
            wall = truth[n]["wall_s"] or 1.0
            row["split_true"][n] = {k: round(100.0 * truth[n][k] / wall, 2) for k in KINDS}
            if got[n] <= 0:
                continue
            row["split_got"][n] = {k: round(100.0 * measured[n].get(k, 0.0) / got[n], 2)
                                   for k in KINDS}
            row["split_error"][n] = {k: round(row["split_got"][n][k] - row["split_true"][n][k], 2)
                                     for k in KINDS}
            split_errors.extend(abs(v) for v in row["split_error"][n].values())
        if split_errors:
            row["mean_split_error"] = round(statistics.mean(split_errors), 3)
            row["max_split_error"] = round(max(split_errors), 3)
    return row


def _fresh(path):
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


def _rotated_runs(ctx, tools, entry, script, run_env, out, truth_path, runs, timeout_s, log,
                  target, score, describe, command=None, stdout_path=None):
    """Runs `script` under every tool `runs` times, rotating the order each round, and appends
    one record per run to entry["runs"]: score(tool, truth) reads the tool's output against
    the truth the target wrote (None when truth_path is None: the target printed it to
    stdout_path); a tool that fails (or whose output cannot be read) is recorded as failed with
    the reason and not run again. command(tool, ctx, script, targets, out), when given, builds
    the command line instead of tool.command (to add the script's arguments)."""
    for r in range(runs):
        order = tools[r % len(tools):] + tools[:r % len(tools)]
        line = []
        for tool in order:
            if tool.name in entry["failed"]:
                continue
            if truth_path and os.path.exists(truth_path):
                os.unlink(truth_path)
            argv = (command or (lambda t, *rest: t.command(*rest)))(tool, ctx, script, [script], out)
            wait_quiet(ctx.quiet_wait_s)
            result = run_measured(argv, cwd=_fresh(out), env=run_env, timeout_s=timeout_s,
                                  stdout_path=stdout_path)
            record = {"ok": result["ok"], "wall_s": result.get("wall_s"),
                      "others_cores": result.get("others_cores")}
            if result["ok"]:
                try:
                    truth = None
                    if truth_path:
                        with open(truth_path) as f:
                            truth = json.load(f)
                    record.update(score(tool, truth))
                except Exception as e:  # a tool's output we cannot read is its failure
                    record["ok"] = False
                    record["error"] = f"could not read its output: {type(e).__name__}: {e}"
            else:
                record["error"] = result.get("error", "failed")
            entry["runs"][tool.name].append(record)
            if not record["ok"]:
                entry["failed"][tool.name] = record["error"]
                line.append(f"{tool.name}=FAILED")
            else:
                line.append(f"{tool.name}={describe(record)}")
        log(f"  {target} run {r + 1}/{runs}: " + " ".join(line))


def run(ctx, tools, runs, workdir, env, log, targets=None, scale=None, timeout_s=600.0):
    tools = [t for t in tools if t.parse is not None]
    out = os.path.join(workdir, "out")
    truth_path = os.path.join(workdir, "truth.json")
    results = {}
    for target in targets or CPU_TARGETS:
        script = os.path.join(TARGETS_DIR, target)
        entry = results[target] = {"runs": {t.name: [] for t in tools}, "failed": {}}
        run_env = dict(env, HEATLINE_TRUTH=truth_path)
        if scale is not None:
            run_env["HEATLINE_TARGET_SCALE"] = str(scale)
        def score(tool, truth):
            measured = tool.parse(out, target, set(truth))
            return {**compare(truth, measured, tool.split), "truth": truth, "measured": measured}

        _rotated_runs(ctx, tools, entry, script, run_env, out, truth_path, runs, timeout_s, log,
                      target, score,
                      lambda rec: f"{rec['mean_share_error']:.1f}/{rec['max_share_error']:.1f}pp")
    shutil.rmtree(out, ignore_errors=True)
    return summarise(results, tools)


def _agg(values, how):
    values = [v for v in values if v is not None]
    if not values:
        return None
    return round(statistics.mean(values) if how == "mean" else max(values), 3)


def summarise(results, tools):
    per_tool = {}
    for entry in results.values():
        entry["summary"] = {}
        for tool in tools:
            runs = [r for r in entry["runs"].get(tool.name, []) if r.get("ok")]
            row = {"runs_ok": len(runs), "split": tool.split}
            if not runs:
                row["status"] = "failed"
                row["reason"] = entry["failed"].get(tool.name, "not run")
            else:
                row["status"] = "ok"
                if tool.name in entry["failed"]:
                    row["reason"] = "some runs failed: " + entry["failed"][tool.name]
                row["mean_share_error"] = _agg([r["mean_share_error"] for r in runs], "mean")
                row["max_share_error"] = _agg([r["max_share_error"] for r in runs], "max")
                row["mean_split_error"] = _agg([r.get("mean_split_error") for r in runs], "mean")
                row["max_split_error"] = _agg([r.get("max_split_error") for r in runs], "max")
                names = sorted(runs[0]["share_true"])
                row["share_true"] = {n: round(statistics.median(r["share_true"][n] for r in runs), 2)
                                     for n in names}
                row["share_got"] = {n: round(statistics.median(r["share_got"][n] for r in runs), 2)
                                    for n in names}
                row["unseen"] = sorted({n for r in runs for n in r["unseen"]})
                if tool.split:
                    row["split_true"], row["split_got"] = {}, {}
                    for n in names:
                        row["split_true"][n] = {
                            k: round(statistics.median(r["split_true"][n][k] for r in runs), 1)
                            for k in KINDS}
                        seen = [r["split_got"][n] for r in runs if n in r.get("split_got", {})]
                        if seen:
                            row["split_got"][n] = {
                                k: round(statistics.median(s[k] for s in seen), 1) for k in KINDS}
            entry["summary"][tool.name] = row
    for tool in tools:
        rows = [e["summary"][tool.name] for e in results.values()]
        good = [row for row in rows if row["status"] == "ok"]
        per_tool[tool.name] = {
            "targets_ok": len(good),
            "targets_failed": len(rows) - len(good),
            "mean_share_error": _agg([row["mean_share_error"] for row in good], "mean"),
            "max_share_error": _agg([row["max_share_error"] for row in good], "max"),
            "mean_split_error": _agg([row.get("mean_split_error") for row in good], "mean"),
            "max_split_error": _agg([row.get("max_split_error") for row in good], "max"),
        }
    return {"targets": results, "per_tool": per_tool}


# ------------------------------------------------------------------ memory
#
# The memory ground truth (tests/targets/memory*.py, tests/targets/_memtruth.py) knows what every
# tagged line allocates (Python and native bytes, summed over its runs), by construction; a
# separate plain run of the same target in tracemalloc mode gives the program's exact peak.
# One error measure for heatline, Scalene and memray:
#
# - line allocations: for each tagged line that allocates at least JUDGED_BYTES in all (times
#   the target scale), the relative error of the bytes the tool charges to that line, in %
#   (a line the tool does not report: -100%). Mean and maximum of the absolute error.
# - peak: the relative error of the tool's peak (heatline: peak_bytes; Scalene:
#   max_footprint_mb; memray: the capture's peak_memory) against the exact peak, in %.

MEMORY_TARGETS = ["memory.py", "memory_threads.py"]
JUDGED_BYTES = 10_000_000


def memory_targets():
    return [t for t in MEMORY_TARGETS if os.path.exists(os.path.join(TARGETS_DIR, t))]


def compare_memory(truth, exact_peak, measured, scale):
    judged = {n: e["alloc_python_bytes"] + e["alloc_native_bytes"] for n, e in truth["lines"].items()}
    judged = {n: b for n, b in judged.items() if b >= JUDGED_BYTES * scale}
    row = {"line_true": judged, "line_got": {}, "line_error": {}}
    for n, want in judged.items():
        got = measured["lines"].get(int(n), 0)
        row["line_got"][n] = int(got)
        row["line_error"][n] = round(100.0 * (got - want) / want, 2)
    errors = [abs(e) for e in row["line_error"].values()]
    if errors:
        row["mean_line_error"] = round(statistics.mean(errors), 2)
        row["max_line_error"] = round(max(errors), 2)
    row["peak_true"] = exact_peak
    row["peak_got"] = measured.get("peak_bytes")
    if exact_peak and measured.get("peak_bytes") is not None:
        row["peak_error"] = round(100.0 * (measured["peak_bytes"] - exact_peak) / exact_peak, 2)
    return row


def memory_accuracy(ctx, tools, runs, workdir, env, log, scale=None, timeout_s=600.0):
    found = memory_targets()
    if not found:
        return {"status": "not measured",
                "reason": "no memory ground-truth programs (tests/targets/memory*.py) exist yet"}
    tools = [t for t in tools if t.memory_parse is not None]
    out = os.path.join(workdir, "out")
    truth_path = os.path.join(workdir, "truth.json")
    scale = 1.0 if scale is None else scale
    results = {}
    for target in found:
        script = os.path.join(TARGETS_DIR, target)
        entry = results[target] = {"runs": {t.name: [] for t in tools}, "failed": {}}
        run_env = dict(env, HEATLINE_TRUTH=truth_path, HEATLINE_TARGET_SCALE=str(scale))
        run_env.pop("HEATLINE_TRUTH_MODE", None)
        exact = run_measured([ctx.python, script], cwd=_fresh(out), timeout_s=timeout_s,
                             env=dict(run_env, HEATLINE_TRUTH_MODE="tracemalloc"))
        if not exact["ok"]:
            entry["error"] = "the exact (tracemalloc) run failed: " + exact.get("error", "")
            log(f"  {target}: {entry['error']}")
            continue
        with open(truth_path) as f:
            exact_peak = (json.load(f).get("peak") or {}).get("bytes")
        entry["exact_peak_bytes"] = exact_peak
        def score(tool, truth):
            return compare_memory(truth, exact_peak, tool.memory_parse(out, target), scale)

        _rotated_runs(ctx, tools, entry, script, run_env, out, truth_path, runs, timeout_s, log,
                      target, score,
                      lambda rec: f"lines {rec.get('mean_line_error', 0):.0f}%/"
                                  f"peak {rec.get('peak_error', 0):+.0f}%")
    shutil.rmtree(out, ignore_errors=True)
    for entry in results.values():
        entry["summary"] = {}
        for tool in tools:
            runs_ok = [r for r in entry["runs"].get(tool.name, []) if r.get("ok")]
            row = {"runs_ok": len(runs_ok)}
            if not runs_ok:
                row["status"] = "failed"
                row["reason"] = entry["failed"].get(tool.name) or entry.get("error", "not run")
            else:
                row["status"] = "ok"
                row["mean_line_error"] = _agg([r.get("mean_line_error") for r in runs_ok], "mean")
                row["max_line_error"] = _agg([r.get("max_line_error") for r in runs_ok], "max")
                peaks = [r.get("peak_error") for r in runs_ok if r.get("peak_error") is not None]
                row["peak_error"] = round(statistics.median(peaks), 2) if peaks else None
                row["line_true"] = runs_ok[0]["line_true"]
                row["line_error"] = {
                    n: round(statistics.median(r["line_error"][n] for r in runs_ok), 1)
                    for n in runs_ok[0]["line_error"]}
            entry["summary"][tool.name] = row
    per_tool = {}
    for tool in tools:
        rows = [e["summary"][tool.name] for e in results.values() if "summary" in e]
        good = [row for row in rows if row["status"] == "ok"]
        per_tool[tool.name] = {
            "targets_ok": len(good),
            "mean_line_error": _agg([row["mean_line_error"] for row in good], "mean"),
            "max_line_error": _agg([row["max_line_error"] for row in good], "max"),
            "mean_abs_peak_error": _agg([abs(row["peak_error"]) for row in good
                                         if row["peak_error"] is not None], "mean"),
        }
    return {"status": "measured", "targets": results, "per_tool": per_tool,
            "config": {"runs": runs, "targets": found, "target_scale": scale,
                       "judged_bytes": JUDGED_BYTES}}
