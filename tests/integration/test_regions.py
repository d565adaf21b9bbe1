"""Regions (heatline.region, record_function) and torch modules against the programs' own
clocks: tests/targets/regions_phases.py (no torch) and torch_modules.py (record_function, and
two instances of one module class with different widths, timed by the program's own hooks)."""

import json
import math
import os
import re

import pytest

from heatline.renderers import chrome

from _tools import chromium_dom

TOLERANCE_PP = 5.0
INTERVAL = 0.004
KINDS = ("python_s", "native_s", "system_s", "cpu_wait_s")

pytestmark = pytest.mark.skipif(bool(os.environ.get("HEATLINE_SANITIZED")),
                                reason="timing is not meaningful under ASan")


def _tolerance_pp(share, seconds, mean_gap_s):
    """5 pp, or three standard errors of a proportion estimated from seconds / mean_gap_s
    point samples when they are more (as in test_inclusive.py)."""
    p = min(max(share / 100.0, 0.0), 1.0)
    return max(TOLERANCE_PP, 300.0 * math.sqrt(p * (1.0 - p) / max(seconds / mean_gap_s, 1.0)))


def _sampled(entry):
    return sum(entry[k] for k in KINDS)


def _run(run_heatline, program, tmp_path, name):
    path, truth_path = tmp_path / "prof.json", tmp_path / "truth.json"
    result = run_heatline("--sampling-interval", str(INTERVAL), "-o", str(path),
                          program(name), str(truth_path), text=True,
                          env={"COLUMNS": "100"}, timeout=300)
    assert result.returncode == 0, result.stderr
    return json.loads(path.read_text()), json.loads(truth_path.read_text()), result


def test_regions_match_the_program_own_clock_and_import_no_torch(run_heatline, program,
                                                                 tmp_path):
    profile, truth, result = _run(run_heatline, program, tmp_path, "regions_phases.py")
    assert truth["torch_imported"] is False
    assert "modules" not in profile
    regions = {r["path"]: r for r in profile["regions"]}
    mean_gap = profile["sampled_s"] / profile["samples"]
    run_s = truth["run_s"]
    errors = []
    for path, true_s in truth["wall"].items():
        region = regions[path]
        want = 100.0 * true_s / run_s
        # its wall, the engine's clock: the same span as the program's
        if abs(100.0 * region["wall_s"] / run_s - want) > TOLERANCE_PP:
            errors.append(f"{path}: wall {region['wall_s']:.3f} s vs true {true_s:.3f} s")
        # its samples: the thread's time while it was open
        got = 100.0 * _sampled(region) / run_s
        if abs(got - want) > _tolerance_pp(want, run_s, mean_gap):
            errors.append(f"{path}: sampled {got:.1f}% vs true {want:.1f}% of the run")
    assert not errors, "\n".join(errors)
    counts = {path: regions[path]["count"] for path in regions}
    assert counts["step"] == counts["step/forward"] == 3 and counts["decorated"] == 2
    # closed where their exits ran: not counted under the path they left
    assert counts["generator"] == counts["after"] == counts["outer"] == counts["inner"] == 1
    assert counts["generator/after"] == counts["outer/inner"] == 0
    top = regions["step/forward"]["top_lines"][0]
    assert top["file"] == program("regions_phases.py")
    # memory: an allocation of the sampling window or more is counted exactly; the region
    # allocates nothing else but its list's growth (a few small samples at most)
    window = profile["memory"]["sampling_window_bytes"]
    true_alloc = truth["alloc_bytes"]["alloc"]
    alloc = regions["alloc"]
    assert abs(alloc["alloc_bytes"] - true_alloc) <= 4 * window, alloc
    # the buffers are kept: the footprint after the last one holds all three
    assert alloc["peak_bytes"] >= true_alloc - 4 * window, alloc
    # the terminal report's section
    assert "Regions" in result.stderr and "step/forward" in result.stderr
    # the Chrome trace: each span a slice on the track of the thread that entered it
    events = [e for e in chrome.to_dict(profile)["traceEvents"] if e.get("cat") == "region"]
    main_tid = next(t["native_id"] for t in profile["threads"] if t["main"])
    steps = [e for e in events if e["args"]["path"] == "step"]
    assert len(steps) == 3 and {e["tid"] for e in steps} == {main_tid}
    worker = [e for e in events if e["args"]["path"] == "worker"]
    assert len(worker) == 1 and worker[0]["tid"] != main_tid
    assert abs(sum(e["dur"] for e in steps) / 1e6 - truth["wall"]["step"]) < 0.01


def test_torch_regions_and_modules_match_the_program_own_hooks(run_heatline, program,
                                                                tmp_path):
    pytest.importorskip("torch")
    profile, truth, result = _run(run_heatline, program, tmp_path, "torch_modules.py")
    mean_gap = profile["sampled_s"] / profile["samples"]
    regions = {r["path"]: r for r in profile["regions"]}
    modules = {(m["root"], m["path"]): m for m in profile["modules"]}
    run_s = truth["run_s"]
    errors = []
    for path, true_s in truth["regions"].items():
        want = 100.0 * true_s / run_s
        for what, got_s in (("wall", regions[path]["wall_s"]),
                            ("sampled", _sampled(regions[path]))):
            got = 100.0 * got_s / run_s
            if abs(got - want) > _tolerance_pp(want, run_s, mean_gap):
                errors.append(f"region {path} ({what}): {got:.1f}% vs true {want:.1f}%")
    net = modules[("Net", "")]
    assert net["count"] == truth["calls"]
    forward_s = truth["modules"][""]
    for path in ("small", "big"):
        module = modules[("Net", path)]
        assert module["class"] == "Stack" and module["count"] == truth["calls"]
        want = 100.0 * truth["modules"][path] / forward_s
        for what, got in (("wall", 100.0 * module["wall_s"] / net["wall_s"]),
                          ("sampled", 100.0 * _sampled(module) / _sampled(net))):
            if abs(got - want) > _tolerance_pp(want, forward_s, mean_gap):
                errors.append(f"module {path} ({what}): {got:.1f}% vs true {want:.1f}%")
        # self: its wall less its three Linear layers'
        layers = sum(modules[("Net", f"{path}.layers.{i}")]["wall_s"] for i in range(3))
        assert abs(module["self_s"] - (module["wall_s"] - layers)) < 1e-6
        assert modules[("Net", f"{path}.layers.0")]["class"] == "Linear"
    assert not errors, "\n".join(errors)
    # the module that raised was closed at its forward hook, not left open
    failing = modules[("Failing", "")]
    assert failing["count"] == truth["failing_calls"]
    assert failing["wall_s"] < 0.5 * net["wall_s"]
    assert "Modules" in result.stderr and "big.layers.0" in result.stderr
    # the HTML report's tables, as the page draws them
    page = tmp_path / "report.html"
    saved = run_heatline("view", str(tmp_path / "prof.json"), "-o", str(page), text=True)
    assert saved.returncode == 0, saved.stderr
    dom = chromium_dom(page.as_uri())
    assert re.search(r'<div id="modules-box">', dom) and "big.layers.0" in dom
    assert re.search(r'<div id="regions-box">', dom) and "compute" in dom
    if truth["nvtx_error"] is None:
        assert regions["nvtx-range"]["count"] == 1
    else:  # a torch without NVTX: the same error as without heatline, and no region
        assert "NVTX" in truth["nvtx_error"] and "nvtx-range" not in regions


def test_regions_in_fork_children_are_merged_under_the_parents_path(run_heatline, program,
                                                                     tmp_path):
    profile, truth, _ = _run(run_heatline, program, tmp_path, "regions_fork.py")
    regions = {r["path"]: r for r in profile["regions"]}
    # the children's tasks ran under the region open at the fork: its path, their counts
    assert regions["main/task"]["count"] == truth["tasks"]
    # the region open at the fork is the parent's time only: one entry, its own wall
    assert regions["main"]["count"] == 1
    assert abs(regions["main"]["wall_s"] - truth["main_s"]) < 0.05 * truth["main_s"]
    children = [p for pid, p in profile["process_profiles"].items()
                if int(pid) != profile["processes"][0]["pid"]]
    assert children and all(r["wall_s"] == 0.0 for p in children for r in p["regions"]
                            if r["path"] == "main")
