"""Inclusive time through stacks deeper than the engine keeps (128 frames), against the wall
times the program measures of its own calls (tests/targets/deep_recursion.py),
and what the report says about the cut stacks.

Tolerance: a function's inclusive time is the time of the samples whose stack holds it. Each
sample charges the time since the previous one to what it sees, so the samples that straddle
the call's start and its end can each be off by up to the longest gap between two samples the
run had (max_sample_gap_s); apart from that the estimate is exact while the stack holds the
function (every sample inside the call sees it). So: 2% of the truth, or twice the run's
longest gap when that is more (a held-up sampler on a loaded machine), never a fixed hope."""

import json
import re

import pytest

from heatline.data.queries import cut_stacks, inclusive_times
from heatline.renderers.html import page_data

INTERVAL = 0.004
SPIN_S = 0.005  # deep_recursion.py's default: each level spins this long


def _run(run_heatline, program, tmp_path, *args):
    path, truth_path = tmp_path / "prof.json", tmp_path / "truth.json"
    script = program("deep_recursion.py")
    result = run_heatline("--sampling-interval", str(INTERVAL), "-o", str(path), script,
                          str(truth_path), *args, text=True, env={"COLUMNS": "200"},
                          timeout=300)
    assert result.returncode == 0, result.stderr
    profile = json.loads(path.read_text())
    # The chain functions are made by exec(), their file "<string>"; so is each exec's own
    # <module>, which a sample may catch (under load, or ASan): keyed by name alone it would
    # stand for the script's <module> (it did: 0.017 s for 1.94 s).
    inclusive = {qualname: seconds for (file, qualname), seconds in
                 inclusive_times(profile).items()
                 if file == script or (file == "<string>" and qualname != "<module>")}
    return profile, json.loads(truth_path.read_text()), inclusive, result.stderr


def _tolerance(profile, truth_s):
    return max(0.02 * truth_s, 2 * profile["max_sample_gap_s"])


def test_every_caller_of_a_400_deep_recursion_keeps_its_inclusive_time(
    run_heatline, program, tmp_path
):
    profile, truth, inclusive, stderr = _run(run_heatline, program, tmp_path)
    checks = {"outer": truth["outer_s"], "deep": truth["outer_s"],
              "<module>": truth["module_s"]}
    errors = [f"{name}: {inclusive.get(name, 0.0):.3f} s vs true {want:.3f} s "
              f"(tolerance {_tolerance(profile, want):.3f} s)"
              for name, want in checks.items()
              if abs(inclusive.get(name, 0.0) - want) > _tolerance(profile, want)]
    assert not errors, "\n".join(errors) + f"\nmax_sample_gap_s {profile['max_sample_gap_s']}"

    # The stacks were cut (the deepest: the recursion's 401 frames, outer, the module and at
    # least the launcher's runpy frame; the deepest levels, 5 ms each, may fall between two
    # samples: as many as the longest gap spans), and nothing was lost: every elided frame
    # runs deep, which is kept.
    cut = cut_stacks(profile)
    unsampled = int(profile["max_sample_gap_s"] / SPIN_S) + 1
    assert cut.deepest >= 404 - unsampled and not cut.open_ended, cut
    assert (cut.kept, cut.outer, cut.inner) == (128, 63, 64)
    assert cut.seconds > 0.5 * cut.total_s and cut.lost_s == 0.0
    # The report says so, in the terminal and the HTML report alike.
    warning = next(w for w in profile["warnings"] if w.startswith("stacks deeper than 128"))
    assert f"the deepest had {cut.deepest} frames" in warning
    assert "every function's inclusive time is complete" in warning
    assert "stacks deeper than 128 frames were cut" in " ".join(stderr.split())
    data = page_data(profile)
    assert warning in data["warnings"]
    # The flame graph shows the marker between the two ends.
    labels = []
    node = data["flame"]
    while node[2]:
        node = max(node[2], key=lambda child: child[1])
        labels.append(node[0])
    assert any(re.fullmatch(r"… \d+(-\d+)? frames elided …", label) for label in labels), labels


@pytest.mark.parametrize("depth", [300])
def test_a_deep_chain_of_distinct_functions_loses_at_most_what_the_report_says(
    run_heatline, program, tmp_path, depth
):
    # chain_0 -> chain_1 -> ... -> chain_300, none recursive: past 128 frames the middle
    # of the stack is elided, and the chain functions there lose the time of those samples.
    profile, truth, inclusive, _ = _run(run_heatline, program, tmp_path, str(depth), "0.005",
                                        "1")
    cut = cut_stacks(profile)
    assert cut.lost_s > 0 and cut.lost_s == cut.seconds
    assert any(f"in {cut.lost_s:.3f} s of it some elided functions" in w
               for w in profile["warnings"])
    outer_errors, bound_errors, short = [], [], []
    for name, want in truth["chain_s"].items():
        got, tolerance = inclusive.get(name, 0.0), _tolerance(profile, want)
        if got > want + tolerance or got < want - cut.lost_s - tolerance:
            bound_errors.append(f"{name}: {got:.3f} s vs true {want:.3f} s")
        index = int(name.split("_")[1])
        # Always among the outermost frames kept: the launcher's few, the module, outer.
        if index < 50 and abs(got - want) > tolerance:
            outer_errors.append(f"{name}: {got:.3f} s vs true {want:.3f} s")
        if got < want - tolerance:
            short.append(index)
    assert not bound_errors, "\n".join(bound_errors)
    assert not outer_errors, "\n".join(outer_errors)
    for name, want in (("outer", truth["outer_s"]), ("<module>", truth["module_s"])):
        assert abs(inclusive.get(name, 0.0) - want) <= _tolerance(profile, want), name
    # The functions short of their time are those of the middle only.
    assert short and min(short) >= 50 and max(short) <= depth - 60, short
