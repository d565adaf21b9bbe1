"""Waiting for a CPU is a kind of its own: with twice as many spinning processes as CPUs, each
worker's running time (python + native) is its CPU time and its cpu_wait the rest of its wall
time (tests/targets/oversubscribed.py measures both itself)."""

import json
import os
import shutil
import subprocess

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


def _profiled(run_heatline, tmp_path, *args):
    path = tmp_path / "profile.json"
    run = run_heatline("-q", "-o", str(path), TARGET, *args, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    return path, json.loads(path.read_text())


def _rules(profile):
    return {item["rule"]: item["text"] for item in profile["summary"]}


@pytest.mark.skipif(not os.path.exists("/proc/thread-self/schedstat"), reason="no schedstat")
def test_the_summary_names_oversubscription_and_what_to_change(run_heatline, tmp_path):
    _, profile = _profiled(run_heatline, tmp_path)
    cpus = os.cpu_count()
    assert profile["cpu_count"] == cpus
    rules = _rules(profile)
    figures = (profile["summary"], profile["totals"], profile["cpu_s"], profile["elapsed_s"],
               profile["warnings"])
    assert "oversubscription" in rules and "busy_machine" not in rules, figures
    text = rules["oversubscription"]
    # 2 x CPUs spinning processes and the main one waiting for them.
    assert f"the {2 * cpus + 1} processes (main, {2 * cpus} multiprocessing" in text, text
    assert f"on a {cpus}-CPU machine" in text and "fewer processes or threads" in text, text
    totals = profile["totals"]
    share = totals["cpu_wait_s"] / (totals["python_s"] + totals["native_s"]
                                    + totals["cpu_wait_s"])
    assert f"so {100 * share:.0f}% of their time" in text, (text, totals)
    # CPUs wanted: the CPU time and the waits over the wall time (the spins overlap).
    wanted = (profile["cpu_s"] + totals["cpu_wait_s"]) / profile["elapsed_s"]
    assert f"wanted {wanted:.1f} CPUs" in text and wanted >= 1.25 * cpus, text


@pytest.mark.skipif(not os.path.exists("/proc/thread-self/schedstat"), reason="no schedstat")
def test_one_worker_is_no_oversubscription(run_heatline, tmp_path):
    """One spinning worker wants one CPU: however busy other programs keep the machine (the
    busy_machine rule may then say so), the program does not oversubscribe it."""
    _, profile = _profiled(run_heatline, tmp_path, "1")
    assert "oversubscription" not in _rules(profile), profile["summary"]
    if "busy_machine" in _rules(profile):
        assert "held by other programs" in _rules(profile)["busy_machine"]


def _without_waits(value):
    if isinstance(value, dict):
        return {k: (0.0 if k in ("cpu_wait_s", "cpu_wait_pct") else _without_waits(v))
                for k, v in value.items()}
    if isinstance(value, list):
        return [_without_waits(v) for v in value]
    return value


@pytest.mark.skipif(not os.path.exists("/proc/thread-self/schedstat"), reason="no schedstat")
def test_the_terminal_report_shows_the_waits_within_80_columns(run_heatline, tmp_path):
    path, profile = _profiled(run_heatline, tmp_path)
    shown = run_heatline("view", str(path), text=True, env={"COLUMNS": "80"})
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80, shown.stdout
    text = " ".join(line.strip() for line in lines)
    assert "Oversubscribed:" in text
    waited = profile["totals"]["cpu_wait_s"]
    assert f"{waited:.2f} s waiting for a CPU" in text or f"{waited:.3f} s waiting" in text, text
    assert "waiting for a CPU" in text.split("Line")[0]  # the file's header, before its table
    # Wide, the line table and the processes have a column of it too (at 80 columns the line
    # table's gives way to the source, and the processes' numbers are cropped).
    wide = run_heatline("view", str(path), text=True, env={"COLUMNS": "200"})
    assert "wait %" in wide.stdout and "wait s" in wide.stdout
    assert "Py s + nat s above CPU s" not in wide.stdout  # running time is CPU time here
    # The same profile with no waits: no column, no figure, as before they were measured.
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps(_without_waits(profile)))
    shown = run_heatline("view", str(plain), text=True, env={"COLUMNS": "80"})
    assert shown.returncode == 0, shown.stderr
    for text in ("wait %", "wait s", "the threads were ready to run", "Oversubscribed"):
        assert text not in shown.stdout, shown.stdout


SPIN = "import time\nend = time.perf_counter() + 0.3\nwhile time.perf_counter() < end:\n    pass\n"


def test_a_schedstat_that_cannot_be_read_is_warned_and_waits_count_as_running(run_heatline,
                                                                               tmp_path):
    """Where /proc refuses the schedstat files (an LD_PRELOAD shim fails their open() with
    EACCES here), the run measures no waits: it says so, charges no cpu_wait, and a thread
    waiting for a CPU counts as running, as the profile format says."""
    compiler = shutil.which("gcc") or shutil.which("cc")
    if compiler is None:
        pytest.skip("needs a C compiler")
    shim = tmp_path / "no_schedstat.so"
    subprocess.run([compiler, "-O2", "-shared", "-fPIC", "-o", str(shim),
                    os.path.join(os.path.dirname(TARGET), "_no_schedstat.c"), "-ldl"],
                   check=True)
    script = tmp_path / "spin.py"
    script.write_text(SPIN)
    path = tmp_path / "profile.json"
    run = run_heatline("-q", "-o", str(path), str(script), text=True,
                       # After what is preloaded already (the ASan runtime, which must come
                       # first, under the sanitizers).
                       env={"LD_PRELOAD": " ".join(filter(None, [os.environ.get("LD_PRELOAD"),
                                                                 str(shim)]))})
    assert run.returncode == 0, run.stderr
    profile = json.loads(path.read_text())
    [warning] = [w for w in profile["warnings"] if "waiting for a CPU was not measured" in w]
    assert "schedstat could not be read (Permission denied)" in warning, warning
    assert profile["totals"]["cpu_wait_s"] == 0.0
    # The spin's 0.3 s of wall time is all running, waits for a CPU included.
    loop = [line for line in profile["files"][str(script)]["lines"] if line["line"] in (3, 4)]
    running = sum(line["python_s"] + line["native_s"] for line in loop)
    assert running == pytest.approx(0.3, abs=0.3 * 0.05 + 2 * profile["max_sample_gap_s"]), loop
