"""Training steps (heatline.step(), PyTorch's Optimizer.step()) and the step window
(--steps A:B), against programs that time their own steps (tests/targets/steps_*.py print
each step's wall time from their own clock): heatline's step durations, the summary's slow
steps, the window's profiled time, and the one-line errors of a bad window."""

import json
import math
import os
import re
import subprocess
import sys

import pytest
from _tools import require_module, source_line

from heatline.data.queries import process_keys

TARGETS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "targets")
LOOP = os.path.join(TARGETS, "steps_loop.py")
TORCH = os.path.join(TARGETS, "steps_torch.py")


def _run(run_heatline, tmp_path, *args, program=LOOP, program_args=()):
    out = tmp_path / "profile.json"
    result = run_heatline("-o", str(out), *args, program, *program_args, text=True,
                          timeout=300)
    assert result.returncode == 0, result.stderr
    truth = json.loads(result.stdout.strip().splitlines()[-1])
    return json.loads(out.read_text()), truth, result.stderr


def test_explicit_steps_match_the_programs_own_clock_and_torch_stays_out(run_heatline,
                                                                          tmp_path):
    profile, truth, stderr = _run(run_heatline, tmp_path)
    steps = profile["steps"]
    assert steps["source"] == "heatline.step"
    assert steps["count"] == len(truth["durations_s"]) == 10
    # Both clocks are read within microseconds of each other at each boundary.
    for ours, theirs in zip(steps["durations_s"], truth["durations_s"]):
        assert ours == pytest.approx(theirs, rel=0.10)
    assert steps["median_s"] == pytest.approx(sorted(truth["durations_s"])[4:6][0], rel=0.10)
    assert not truth["torch_imported"]  # the import watch never imports torch itself
    assert "Steps\n10 steps marked by heatline.step()" in stderr
    # A steady run: no step stands out, the summary says nothing of steps.
    assert not any(item["rule"] == "steps" for item in profile["summary"])
    assert "Slow steps" not in stderr


def test_a_slow_step_is_named_in_the_summary(run_heatline, tmp_path):
    profile, truth, stderr = _run(run_heatline, tmp_path, program_args=("--slow", "7"))
    items = [item for item in profile["summary"] if item["rule"] == "steps"]
    assert len(items) == 1
    durations = truth["durations_s"]
    median = sorted(durations)[4:6]
    text = items[0]["text"]
    assert "step 7 took" in text and "x the median" in text
    # Only step 7 is named: the others are the steady ones.
    assert [f"step {n} " for n in range(1, 11) if f"step {n} " in text] == ["step 7 "]
    ours = profile["steps"]["durations_s"][6]
    assert ours == pytest.approx(durations[6], rel=0.10)
    assert f"step 7 took {ours:.2f} s" in text
    assert durations[6] > 3 * max(median)  # the truth: step 7 stands out
    assert "step 7 took" in " ".join(stderr.split())
    # where its time went: the region whose span grew, at its line (the 0.5 s sleep)
    found = re.search(r"step 7 took [\d.]+ s, [\d.]+x the median [\d.]+ s, ([\d.]+) s of it in "
                      r"region data \(top line steps_loop\.py:(\d+)\)", text)
    assert found, text
    assert 0.5 <= float(found.group(1)) + 0.005 and float(found.group(1)) <= ours + 0.005
    assert int(found.group(2)) == source_line(LOOP, "# the data line")


def test_optimizer_steps_match_the_programs_own_clock(run_heatline, tmp_path):
    require_module("torch", "torch")
    profile, truth, _ = _run(run_heatline, tmp_path, program=TORCH)
    steps = profile["steps"]
    assert steps["source"] == "optimizer"
    assert steps["count"] == len(truth["durations_s"]) == 7
    for ours, theirs in zip(steps["durations_s"], truth["durations_s"]):
        assert ours == pytest.approx(theirs, rel=0.10)


def test_the_window_profiles_only_its_steps(run_heatline, tmp_path):
    profile, truth, stderr = _run(run_heatline, tmp_path, "--steps", "4:6",
                                  program_args=("--step-s", "0.15"))
    window_s = sum(truth["durations_s"][3:6])
    periods = profile["profiled_periods"]
    assert len(periods) == 1
    start, end = periods[0]
    assert end - start == pytest.approx(window_s, rel=0.15)
    # It starts where step 4 does on heatline's own clock (the resume is at that mark).
    assert start == pytest.approx(profile["steps"]["started_s"][3], abs=0.01)
    # The samples cover that time: the main thread's charged time is the window's, to the
    # sampling's own edges (one interval either side) well inside 15%.
    main = next(thread for thread in profile["threads"] if thread["main"])
    charged = sum(main[key] for key in ("python_s", "native_s", "system_s", "cpu_wait_s",
                                        "unattributed_s"))
    assert charged == pytest.approx(window_s, rel=0.15)
    assert profile["steps"]["window"] == [4, 6]
    assert profile["steps"]["count"] == 10  # every step is still timed
    assert "Profiled steps 4-6 only (--steps 4:6) of the 10 the program marked" in stderr


def test_a_window_never_reached_writes_an_empty_profile_that_says_so(run_heatline, tmp_path):
    profile, _, stderr = _run(run_heatline, tmp_path, "--steps", "40:60")
    assert profile["samples"] == 0
    assert profile["profiled_periods"] == []
    assert profile["steps"]["count"] == 10 and profile["steps"]["window"] == [40, 60]
    flat = " ".join(stderr.split())
    assert "never reached the --steps window" in flat
    assert "Steps 40-60 asked for (--steps 40:60), but the program marked 10 steps" in flat


@pytest.mark.parametrize("window, says", [
    ("6:4", "the last step comes before the first in '6:4'"),
    ("a:b", "must be A:B, two step numbers (e.g. 4:6), not 'a:b'"),
    ("4", "must be A:B, two step numbers (e.g. 4:6), not '4'"),
    ("0:3", "steps are counted from 1, not '0:3'"),
])
def test_a_bad_window_is_one_line(run_heatline, window, says):
    result = run_heatline("--steps", window, LOOP, text=True)
    assert result.returncode == 2
    assert result.stderr == f"heatline: error: argument --steps: {says}\n"
    assert result.stdout == ""


def test_a_bad_window_through_the_api_is_a_heatline_error():
    code = ("import heatline\n"
            "try:\n    heatline.start(steps='6:4')\n"
            "except heatline.HeatlineError as exc:\n    print(exc)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=60, check=False)
    assert result.stdout == "option steps: the last step comes before the first in '6:4'\n"


def test_each_process_keeps_its_own_steps(run_heatline, tmp_path):
    profile, _, _ = _run(run_heatline, tmp_path,
                         program=os.path.join(TARGETS, "steps_children.py"))
    main_pid = str(profile["processes"][0]["pid"])
    counts = {pid: own["steps"]["count"] for pid, own in profile["process_profiles"].items()}
    assert counts.pop(main_pid) == 5
    assert list(counts.values()) == [3]  # the fork child's own
    assert profile["steps"]["count"] == 5  # the merged profile's: the main process's


def test_dataloader_workers_follow_the_loops_window(run_heatline, tmp_path):
    """--steps 4:6 over a DataLoader's fork workers, which mark no steps: each worker is
    profiled while the loop's window is open, and only then. A worker sees the window open and
    close at its next poll of its parent's window file (every 100 ms at most, later on a
    loaded machine), so its own profiled period starts and ends a little after the loop's; its
    time is checked against the CPU time it logged for its items inside its own period (on
    the wall clock), within the sampling's counting noise."""
    require_module("torch", "torch")
    out = tmp_path / "profile.json"
    interval = 0.002
    result = run_heatline("--steps", "4:6", "--sampling-interval", str(interval), "-o", str(out),
                          os.path.join(TARGETS, "steps_dataloader.py"), str(tmp_path),
                          text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    profile = json.loads(out.read_text())
    [(start_s, end_s)] = profile["profiled_periods"]
    window = (profile["started_at_epoch"] + start_s, profile["started_at_epoch"] + end_s)
    keys = process_keys(profile["processes"])
    workers = [(key, p) for key, p in zip(keys, profile["processes"])
               if p["role"] == "DataLoader worker"]
    assert len(workers) == 2, profile["processes"]
    in_window = 0.0
    for key, worker in workers:
        own = profile["process_profiles"][key]
        [(own_start, own_end)] = own["profiled_periods"]
        period = (own["started_at_epoch"] + own_start, own["started_at_epoch"] + own_end)
        # it follows the loop's window: on after the loop's window opened, off after it closed
        assert window[0] <= period[0] < window[1] <= period[1], (window, period)
        log = tmp_path / f"worker-{worker['pid']}.jsonl"
        items = [json.loads(line) for line in log.read_text().splitlines()]

        def cpu_within(a, b):
            return sum(item["cpu"] * max(0.0, min(b, item["end"]) - max(a, item["start"]))
                       / max(item["end"] - item["start"], 1e-9) for item in items)

        truth = cpu_within(*period)
        measured = worker["python_s"] + worker["native_s"]
        noise = 3 * math.sqrt(max(truth, measured) / interval) * interval + 2 * interval
        assert abs(measured - truth) <= noise, (worker["pid"], measured, truth, noise)
        # not the rest of its run: it made items before and after
        assert sum(item["cpu"] for item in items) - truth > noise, items
        in_window += cpu_within(*window)
    # the loop took three batches in its window: each started one item of ITEM_S (0.1 s)
    assert in_window > 0.2, in_window
