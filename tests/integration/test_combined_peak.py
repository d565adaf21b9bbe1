"""The memory peak of a program with child processes (tests/targets/
peak_fork_worker.py): the profile's peak is the processes' combined one, with its own moment
and the lines of every process that held memory then; the main process's own peak stays a
figure of its own; the report names them.

The program notes wall-clock times around pool.apply, around the worker's 150 MiB allocation
and around a 1 MiB allocation of its own (CLOCK_LINE), whose moment the profile also records
(the first point of that line's timeline). That allocation puts wall-clock times on the
profile's clock: a wall time x is at profile time t_clock + (x - c), c somewhere in the
measured window [clock_began, clock_ended], so every bound below widens by exactly that
window's width (plus the profile's microsecond rounding), never by a guess."""

import json
import os

import pytest

from heatline.renderers.html import page_data

MIB = 2**20
ROUNDING_S = 2e-6  # times in the profile are rounded to the microsecond


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    import subprocess
    import sys

    tmp = tmp_path_factory.mktemp("peak")
    program = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "targets",
                           "peak_fork_worker.py")
    path, truth_path = tmp / "prof.json", tmp / "truth.json"
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "NO_COLOR")}
    env["COLUMNS"] = "300"
    result = subprocess.run([sys.executable, "-m", "heatline", "-o", str(path), program,
                             str(truth_path)], capture_output=True, text=True, timeout=300,
                            env=env, check=False)
    assert result.returncode == 0, result.stderr
    return (json.loads(path.read_text()), json.loads(truth_path.read_text()), program,
            result.stderr)


def _main_clock(profile, truth, program):
    """(earliest, latest): the profile times a wall time of 0 can be at, from CLOCK_LINE."""
    main = profile["process_profiles"][str(truth["main_pid"])]
    row = next(line for line in main["files"][program]["lines"]
               if line["line"] == truth["lines"]["CLOCK_LINE"])
    t_clock = row["timeline"][0][0]
    began, ended = truth["clock"]
    return t_clock - ended - ROUNDING_S, t_clock - began + ROUNDING_S


def test_the_combined_peak_is_during_pool_apply_when_the_worker_allocates(run):
    profile, truth, program, _ = run
    earliest, latest = _main_clock(profile, truth, program)
    peak_t = profile["combined_peak"]["t_s"]
    worker = truth["worker"]
    apply_began, apply_ended = truth["apply"]
    # During pool.apply, once the worker has begun its allocation (the sum first reaches its
    # top then, unless a sampled small allocation lifts it a little later while the worker
    # still holds its 150 MiB: the worker frees it before pool.apply returns).
    assert apply_began + earliest <= peak_t <= apply_ended + latest, (peak_t, truth)
    assert worker["began"] + earliest <= peak_t, (peak_t, truth)
    # The figure: the worker's 150 MiB and the main process's 41 MiB held together, beyond
    # the main process's own peak (150 MiB alone, earlier).
    assert profile["peak_bytes"] >= 191 * MIB
    assert 150 * MIB <= profile["main_peak_bytes"] < profile["peak_bytes"]
    own = profile["main_peak_at"]
    assert (own["file"], own["line"]) == (program, truth["lines"]["MAIN_ALONE_LINE"])
    assert own["t_s"] < apply_began + earliest


def test_the_lines_holding_memory_at_the_combined_peak_are_named_with_their_process(run):
    profile, truth, program, stderr = run
    worker_pid = truth["worker"]["pid"]
    at = profile["peak_at"]
    assert (at["file"], at["line"], at["pid"]) == (program, truth["lines"]["WORKER_LINE"],
                                                   worker_pid)
    assert at["t_s"] == profile["combined_peak"]["t_s"]
    held = {(line["pid"], line["line"]): line["bytes"] for line in
            profile["combined_peak"]["lines"] if line["file"] == program}
    # Allocations of a sampling window or more are counted exactly: 150 MiB and 40 MiB.
    assert held[(worker_pid, truth["lines"]["WORKER_LINE"])] >= 150 * MIB
    assert held[(truth["main_pid"], truth["lines"]["MAIN_KEEP_LINE"])] >= 40 * MIB
    assert (truth["main_pid"], truth["lines"]["MAIN_ALONE_LINE"]) not in held  # freed by then
    # The terminal report names the moment, the worker's line with its process, and the main
    # process's own peak apart.
    footer = " ".join(stderr.split())
    rel = os.path.relpath(program)
    from heatline.renderers.terminal import _duration  # the report's own spelling of a time

    assert (f"at {_duration(profile['combined_peak']['t_s'])} (all processes together), held by "
            f"{rel}:{truth['lines']['WORKER_LINE']} ") in footer, footer
    assert f"(pid {worker_pid}, Pool worker)" in footer
    assert f"main process alone {profile['main_peak_bytes'] / MIB:.1f} MiB at " in footer
    assert f"{rel}:{truth['lines']['MAIN_ALONE_LINE']};" in footer
    # So does the HTML report.
    peak = page_data(profile)["peak"]
    assert peak["lines"][0][:2] == [program, truth["lines"]["WORKER_LINE"]]
    assert peak["lines"][0][3] == f"pid {worker_pid}, Pool worker"
    assert peak["main"][2:] == [program, truth["lines"]["MAIN_ALONE_LINE"]]
