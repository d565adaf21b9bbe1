"""`heatline ctl on|off|status PID`, run as a user runs it: `heatline --off` on a program in one
process, `heatline ctl` from another, and the profile holding only the phase that ran while on
(tests/targets/ctl_phases.py)."""

import json
import os
import stat
import subprocess
import sys
import time

import pytest

from conftest import PROGRAMS


def _env(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "XDG_RUNTIME_DIR"}
    env["TMPDIR"] = str(tmp_path)  # a control directory of the test's own
    return env


def _ctl(env, *args):
    done = subprocess.run([sys.executable, "-m", "heatline", "ctl", *args], env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert "Traceback" not in done.stderr
    return done


def _wait_for(path, process):
    deadline = time.monotonic() + 120  # a hang guard only
    while not os.path.exists(path):
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.005)


def _start(tmp_path, env, *options):
    work = tmp_path / "work"
    work.mkdir()
    profile = tmp_path / "p.json"
    process = subprocess.Popen(
        [sys.executable, "-m", "heatline", "--off", "-q", "-o", str(profile), *options,
         os.path.join(PROGRAMS, "ctl_phases.py"), str(work)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return process, work, profile


def _functions(profile):
    [entry] = [e for f, e in profile["files"].items() if f.endswith("ctl_phases.py")]
    return {f["qualname"]: f["python_s"] + f["native_s"] + f["system_s"] + f.get("cpu_wait_s", 0.0)
            for f in entry["functions"]}


def test_only_the_phase_between_on_and_off_is_profiled(tmp_path):
    env = _env(tmp_path)
    process, work, profile_path = _start(tmp_path, env)
    pid = str(process.pid)
    _wait_for(work / "ready", process)
    assert _ctl(env, "status", pid).stdout == f"{pid}: profiling off\n"
    before_on = time.monotonic()
    on = _ctl(env, "on", pid)
    assert (on.returncode, on.stdout) == (0, f"{pid}: profiling on\n"), on
    assert _ctl(env, "status", pid).stdout == f"{pid}: profiling on\n"
    (work / "go_on").touch()
    _wait_for(work / "during_done", process)
    off = _ctl(env, "off", pid)
    after_off = time.monotonic()
    assert (off.returncode, off.stdout) == (0, f"{pid}: profiling off\n"), off
    (work / "go_off").touch()
    stdout, stderr = process.communicate(timeout=120)
    assert (process.returncode, stdout) == (0, "phases done\n"), stderr

    truth = json.loads((work / "truth.json").read_text())
    profile = json.loads(profile_path.read_text())
    functions = _functions(profile)
    # Before `ctl on` returned and after `ctl off` returned: nothing at all.
    assert "before_work" not in functions and "after_work" not in functions, functions
    # In between: the phase's own busy time, one window of time, charged its length give or
    # take the run's longest gap between samples plus its longest tick (docs/accuracy.md; a
    # loaded machine stretches both, and the profile says by how much).
    want = truth["during_work"]["wall_s"]
    got = functions["busy"]  # the work runs in busy(), called by during_work
    resolution = profile["max_sample_gap_s"] + profile["max_tick_s"]
    assert abs(got - want) <= resolution, (got, want, resolution)
    # One period on, inside the span the test had it on, covering the phase.
    [[start, end]] = profile["profiled_periods"]
    assert want <= end - start <= after_off - before_on
    # (The host's steal time is the machine's, not this run's doing: not checked here.)
    assert [w for w in profile["warnings"] if not w.startswith("the hypervisor took")] == []
    # The control files are gone with the process.
    assert os.listdir(tmp_path / f"heatline-{os.geteuid()}") == []


def test_ctl_on_a_process_that_is_not_a_heatline_run_is_one_line_and_status_1(tmp_path):
    env = _env(tmp_path)
    for pid, message in ((os.getpid(), "is not a heatline run"), (2**22 + 1, "is not running")):
        done = _ctl(env, "on", str(pid))
        assert done.returncode == 1
        assert done.stderr.startswith("heatline: error: ") and message in done.stderr
        assert done.stderr.count("\n") == 1 and done.stdout == ""


def test_an_unsafe_control_directory_is_refused(tmp_path):
    directory = tmp_path / f"heatline-{os.geteuid()}"
    directory.mkdir()
    directory.chmod(0o777)
    env = _env(tmp_path)
    done = subprocess.run([sys.executable, "-m", "heatline", "-q", "-o", str(tmp_path / "p.json"),
                           os.path.join(PROGRAMS, "output.py")], env=env, capture_output=True,
                          timeout=120, check=False)
    plain = subprocess.run([sys.executable, os.path.join(PROGRAMS, "output.py")],
                           capture_output=True, timeout=120, check=False)
    assert (done.returncode, done.stdout, done.stderr) == (plain.returncode, plain.stdout,
                                                            plain.stderr)
    assert os.listdir(directory) == []
    warnings = json.loads((tmp_path / "p.json").read_text())["warnings"]
    [warning] = [w for w in warnings if w.startswith("heatline ctl cannot reach this run")]
    assert "refusing control directory" in warning and "open to other users" in warning
    assert stat.S_IMODE(directory.stat().st_mode) == 0o777  # left as it was


def test_a_symlinked_command_file_is_not_followed(tmp_path):
    env = _env(tmp_path)
    process, work, _ = _start(tmp_path, env)
    try:
        _wait_for(work / "ready", process)
        command = tmp_path / f"heatline-{os.geteuid()}" / f"{process.pid}.cmd"
        planted = tmp_path / "planted"
        planted.write_text("7 on\n")
        planted.chmod(0o600)
        command.unlink()
        command.symlink_to(planted)
        time.sleep(0.5)  # several polls (every 100 ms)
        assert _ctl(env, "status", str(process.pid)).stdout == f"{process.pid}: profiling off\n"
    finally:
        (work / "go_on").touch()
        (work / "go_off").touch()
        process.communicate(timeout=120)


@pytest.mark.parametrize("interval", ["0.01", "0.5"])
def test_ctl_answers_whatever_the_sampling_interval(tmp_path, interval):
    env = _env(tmp_path)
    process, work, profile_path = _start(tmp_path, env, "--sampling-interval", interval)
    try:
        _wait_for(work / "ready", process)
        assert _ctl(env, "on", str(process.pid)).returncode == 0
    finally:
        (work / "go_on").touch()
        (work / "go_off").touch()
        process.communicate(timeout=120)
    assert len(json.loads(profile_path.read_text())["profiled_periods"]) == 1
