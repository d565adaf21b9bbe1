"""Attribution accuracy against ground-truth programs (tests/targets/).

Each target times its own phases (tests/targets/_truth.py). heatline profiles the target and
every phase function's share of the time, and its Python / native / system split, must be
within TOLERANCE_PP percentage points of the truth.
"""

import json
import math
import os

import pytest

# The sanitizer run (make sanitize) checks memory and UB, not timing: under ASan the targets'
# timings are not what they measure, so these comparisons run in the normal build only.
pytestmark = pytest.mark.skipif(
    bool(os.environ.get("HEATLINE_SANITIZED")), reason="timing is not meaningful under ASan"
)

TARGETS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "targets")
TOLERANCE_PP = 3.0
INTERVAL = 0.004


def _split_tolerance_pp(share, seconds, mean_gap_s=INTERVAL):
    """The split of a phase is a proportion estimated from about seconds / mean_gap_s point
    samples of its thread's state, the mean gap being the run's own (sampled_s / samples: a
    loaded machine takes fewer samples than INTERVAL asks for); when the phase is short and its
    state truly mixed (a thread that holds the GIL part of the time), three standard errors of
    that proportion can exceed TOLERANCE_PP. The allowance is the larger of the two, never a
    per-phase constant."""
    samples = max(seconds / mean_gap_s, 1.0)
    p = min(max(share / 100.0, 0.0), 1.0)
    return max(TOLERANCE_PP, 300.0 * math.sqrt(p * (1.0 - p) / samples))


def _true_range(phase, kind, waits_measured=True):
    """The seconds of `kind` the truth allows for a phase. Its time on a CPU is of its kind
    (the task clock, which counts the vCPU's steal time as the kernel cannot see it), its
    run-queue wait is cpu_wait, the rest of its wall time system (tests/targets/_truth.py).

    heatline charges a wait the kernel measured at the thread's next sample (sampler.c), as
    cpu_wait, out of that sample's time, whatever the sample found the thread doing: a wait
    after a wake-up from a block, which the sample before counted as blocked, can come out
    of running time instead, and a preemption's wait out of blocked time. So running and
    system time are each known to within the phase's wait; cpu_wait itself is the kernel's.
    Where the run's waits were not measured (the profile warns), a waiting thread counts as
    running, unless still waking from a block (system): its running time lies between its
    time on a CPU and that plus its wait, and its system time likewise."""
    on_cpu = phase["python_s"] + phase["native_s"]
    wait = phase.get("cpu_wait_s", 0.0)
    if kind == "cpu_wait_s":
        if not waits_measured:
            return 0.0, 0.0
        # Each thread's first and last wait of the phase may be charged outside it: the first
        # to the sample before the phase began, the last, when the thread ends, read from
        # what the sampler saw of it. Each is about one timeslice's mean wait, from the
        # thread's own schedstat counts.
        edge = 2 * phase.get("threads", 1) * wait / max(phase.get("timeslices", 0), 1)
        return max(wait - edge, 0.0), wait + edge
    if kind == "system_s":
        if waits_measured:
            return max(phase[kind] - wait, 0.0), phase[kind] + wait
        return phase[kind], phase[kind] + wait
    if phase.get("kind") == "system":
        # A blocking phase's busy moments are Python or native, the truth cannot say which
        # (seen beside other suites: blocking_read's Popen, 4.9% Python by heatline, all of
        # its busy time, against a truth that puts it under native).
        return 0.0, on_cpu + wait
    if phase[kind] > 0:
        return max(phase[kind] - (wait if waits_measured else 0.0), 0.0), phase[kind] + wait
    return 0.0, 0.0


def _profile_target(run_heatline, tmp_path, name):
    truth_path = tmp_path / "truth.json"
    profile_path = tmp_path / "profile.json"
    result = run_heatline(
        "-q", "--sampling-interval", str(INTERVAL), "-o", str(profile_path),
        os.path.join(TARGETS, name), env={"HEATLINE_TRUTH": str(truth_path)}, text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    profile = json.loads(profile_path.read_text())
    return (json.loads(truth_path.read_text()), measured(profile), mean_gap_s(profile),
            waits_measured(profile))


def waits_measured(profile):
    """Whether the run measured waits for a CPU (the profile warns where it did not)."""
    return not any("waiting for a CPU was not measured" in w for w in profile["warnings"])


def mean_gap_s(profile):
    """The run's mean time between samples (INTERVAL where it took none)."""
    return profile["sampled_s"] / profile["samples"] if profile["samples"] else INTERVAL


def measured(profile):
    """{qualname: function entry} of a profile, for _check."""
    return {
        function["qualname"]: function
        for entry in profile["files"].values()
        for function in entry["functions"]
    }


def _shares(table, names, key):
    total = sum(table[name][key] for name in names)
    return {name: 100.0 * table[name][key] / total for name in names}


KINDS = ("python_s", "native_s", "system_s", "cpu_wait_s")


def _check(truth, measured, mean_gap=INTERVAL, measured_waits=True):
    names = sorted(truth)
    missing = [name for name in names if name not in measured]
    assert not missing, f"no samples at all for {missing}"
    for name in names:
        measured[name]["total_s"] = sum(measured[name].get(k, 0.0) for k in KINDS)
        truth[name]["total_s"] = truth[name]["wall_s"]
    got = _shares(measured, names, "total_s")
    want = _shares(truth, names, "total_s")
    errors = []
    for name in names:
        if abs(got[name] - want[name]) > TOLERANCE_PP:
            errors.append(f"{name}: share {got[name]:.1f}% vs true {want[name]:.1f}%")
        for kind in KINDS:
            got_split = 100.0 * measured[name].get(kind, 0.0) / measured[name]["total_s"]
            want_split = 100.0 * truth[name].get(kind, 0.0) / truth[name]["total_s"]
            low, high = (100.0 * x / truth[name]["total_s"]
                         for x in _true_range(truth[name], kind, measured_waits))
            allowed = _split_tolerance_pp(want_split, truth[name]["total_s"], mean_gap)
            if not low - allowed <= got_split <= high + allowed:
                errors.append(
                    f"{name}: {kind} {got_split:.1f}% vs true {want_split:.1f}%"
                    f" (allowed {low:.1f}-{high:.1f}%)"
                )
    assert not errors, "\n".join(errors)


def test_main_thread_phases_are_attributed_within_tolerance(run_heatline, tmp_path):
    pytest.importorskip("numpy")
    _check(*_profile_target(run_heatline, tmp_path, "main_thread.py"))


def test_thread_phases_are_attributed_within_tolerance(run_heatline, tmp_path):
    _check(*_profile_target(run_heatline, tmp_path, "threads.py"))


def test_the_truth_counts_time_on_a_cpu_with_the_task_clock(run_python, tmp_path):
    """The truth's busy time is the thread's task clock (plus run-queue wait), not its CPU time:
    in a VM the guest kernel leaves the hypervisor's steal time out of a thread's CPU time and
    out of its run-queue wait, so CPU time counted it as blocked (5-22% of a phase in bursts
    here), and heatline, which rightly sees the thread running, was judged wrong. A phase of pure
    Python alone on its thread is busy from its start to its end, whatever the host does."""
    truth_path = tmp_path / "truth.json"
    script = tmp_path / "alone.py"
    script.write_text(
        f"import sys\nsys.path.insert(0, {TARGETS!r})\nimport _truth\n"
        "print(_truth._BusyClock().name)\n"
        "@_truth.phase('python')\n"
        "def spin():\n"
        "    total = 0\n"
        "    for i in range(3_000_000):\n"
        "        total += i * i % 7\n"
        "spin()\n"
    )
    result = run_python(str(script), env={"HEATLINE_TRUTH": str(truth_path)}, text=True)
    assert result.returncode == 0, result.stderr
    if result.stdout.strip() != "task-clock":
        if os.environ.get("HEATLINE_REQUIRE_TOOLS"):
            pytest.fail("perf_event_open (task clock) refused: the truth would miss steal time")
        pytest.skip("perf_event_open refused here (kernel.perf_event_paranoid): truth falls back")
    spin = json.loads(truth_path.read_text())["spin"]
    assert spin["busy_clock"] == "task-clock"
    # The task clock runs whenever the thread is current, CPU time only while it is not stolen.
    assert spin["cpu_s"] - 0.002 <= spin["on_cpu_s"] <= spin["wall_s"] + 1e-6, spin
    # Nothing in the phase blocks: runnable or on a CPU throughout (the reads of the clocks at
    # its two ends are outside it).
    assert spin["system_s"] < 0.01 * spin["wall_s"] + 0.001, spin
