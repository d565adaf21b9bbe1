"""Waiting for a CPU is a kind of its own: with twice as many spinning processes as CPUs, each
worker's running time (python + native) is its CPU time and its cpu_wait the rest of its wall
time (tests/targets/oversubscribed.py measures both itself)."""

import json
import os

import pytest

TARGET = os.path.join(os.path.dirname(__file__), "..", "targets", "oversubscribed.py")


def _spin(profile):
    running = waiting = 0.0
    for entry in profile["files"].values():
        for function in entry["functions"]:
            if function["qualname"] == "spin":
                running += function["python_s"] + function["native_s"]
                waiting += function.get("cpu_wait_s", 0.0)
    return running, waiting


@pytest.mark.skipif(not os.path.exists("/proc/thread-self/schedstat"), reason="no schedstat")
def test_running_time_is_cpu_time_and_the_rest_is_waiting_for_a_cpu(run_heatline, tmp_path):
    path = tmp_path / "profile.json"
    run = run_heatline("-q", "-o", str(path), TARGET, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    truth = json.loads(run.stdout)
    profile = json.loads(path.read_text())
    assert not [w for w in profile["warnings"] if "waiting for a CPU was not measured" in w]
    for pid, worker in truth.items():
        own = profile["process_profiles"][pid]
        running, waiting = _spin(own)
        # Each end of the spin is placed to within a sample (the longest gap between two), and
        # a wait is known only when it ends, so the last one (a timeslice's wait, on average
        # wait_s / slices) can fall after the spin.
        tolerance = 2 * own["max_sample_gap_s"] + 2 * worker["wait_s"] / max(worker["slices"], 1)
        assert running == pytest.approx(worker["cpu_s"], abs=tolerance), (pid, worker, running)
        assert running + waiting == pytest.approx(worker["wall_s"], abs=tolerance), (
            pid, worker, running, waiting)
        assert waiting == pytest.approx(worker["wait_s"], abs=tolerance), (pid, worker, waiting)
