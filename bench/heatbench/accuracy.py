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

import glob
import json
import os
import shutil
import statistics

from .measure import run_measured

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
        for r in range(runs):
            order = tools[r % len(tools):] + tools[:r % len(tools)]
            line = []
            for tool in order:
                if tool.name in entry["failed"]:
                    continue
                if os.path.exists(truth_path):
                    os.unlink(truth_path)
                command = tool.command(ctx, script, [script], out)
                result = run_measured(command, cwd=_fresh(out), env=run_env, timeout_s=timeout_s)
                record = {"ok": result["ok"], "wall_s": result.get("wall_s")}
                if result["ok"]:
                    try:
                        with open(truth_path) as f:
                            truth = json.load(f)
                        measured = tool.parse(out, target, set(truth))
                        record.update(compare(truth, measured, tool.split))
                        record["truth"] = truth
                        record["measured"] = measured
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
                    line.append(f"{tool.name}={record['mean_share_error']:.1f}/"
                                f"{record['max_share_error']:.1f}pp")
            log(f"  {target} run {r + 1}/{runs}: " + " ".join(line))
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


# ------------------------------------------------------------------ memory (extension point)
#
# Memory ground truth (per-line allocations, peak) is being added to tests/targets/ as
# memory*.py programs with a truth file. When they exist, memory_accuracy() should run them under
# heatline, Scalene and memray and compare per-line allocated bytes and the peak with the truth,
# with one error measure for all three (like compare() above). Until then it reports why there
# is no memory comparison, and the rendered docs say so.


def memory_targets():
    return sorted(glob.glob(os.path.join(TARGETS_DIR, "memory*.py")))


def memory_accuracy(ctx, tools, runs, workdir, env, log):
    found = memory_targets()
    if not found:
        return {"status": "not measured",
                "reason": "no memory ground-truth programs (tests/targets/memory*.py) exist yet"}
    return {"status": "not measured",
            "reason": ("memory ground-truth programs exist (" +
                       ", ".join(os.path.basename(p) for p in found) +
                       ") but the harness does not compare memory yet")}
