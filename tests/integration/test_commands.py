"""Commands profiled by name: `heatline NAME` runs a Python script found on PATH (a console
script) as the shell would run it, and `heatline -- CMD` profiles every Python process any
command starts (a shell, make), merged under the command as the processes table's root
(run/command.py). The work is tests/targets/command_work.py's loop, whose busy time each
process measures itself."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from heatline.run import carrier

from conftest import PROGRAMS
from test_cli_errors import assert_one_error_line

SANITIZED = bool(os.environ.get("HEATLINE_SANITIZED"))
timing = pytest.mark.skipif(SANITIZED, reason="timing is not meaningful under ASan")
WORK = os.path.join(PROGRAMS, "command_work.py")
TIMEOUT_S = 240


def _profile(run_heatline, tmp_path, *args, env=None, status=0):
    path = tmp_path / "profile.json"
    run = run_heatline("-q", "-o", str(path), *args, text=True, timeout=TIMEOUT_S,
                       env=env, cwd=str(tmp_path))
    assert run.returncode == status, run.stderr
    with open(path) as f:
        return json.load(f), run


def _truths(run):
    return {truth["name"]: truth for truth in map(json.loads, run.stdout.splitlines())}


def _loop(profile):
    """The time charged to command_work.py's loop: Python time and waits for a CPU, what the
    truth's busy_s measures of a pure-Python loop."""
    functions = [f for f in profile["files"][WORK]["functions"] if f["qualname"] == "loop"]
    assert len(functions) == 1, profile["files"][WORK]["functions"]
    return functions[0]["python_s"] + functions[0].get("cpu_wait_s", 0.0)


def _tolerance_s(profile):
    """What one stretch of running is charged within, in a process's own profile: its longest
    gap between samples plus its longest tick, and its waits for heatline's lock (running by
    heatline, blocked by the truth)."""
    return (profile["max_sample_gap_s"] + profile["max_tick_s"]
            + sum(t.get("engine_wait_s", 0.0) for t in profile["threads"]))


def _check_processes(profile, truths, argv):
    """The command is the root; each Python process is a child of it, its work charged to
    the loop in its own profile, within its sampling's resolution."""
    root, *children = profile["processes"]
    assert (root["role"], root["argv"]) == ("command", argv)
    assert sorted(p["argv"][1] for p in children) == sorted(truths)
    for process in children:
        truth = truths[process["argv"][1]]
        assert process["pid"] == truth["pid"] and process["ppid"] == root["pid"] == truth["ppid"]
        assert process["role"] == "python subprocess" and process["argv"][0] == WORK
        own = profile["process_profiles"][str(process["pid"])]
        assert _loop(own) == pytest.approx(truth["busy_s"], abs=_tolerance_s(own))
    total = sum(truth["busy_s"] for truth in truths.values())
    slack = sum(_tolerance_s(profile["process_profiles"][str(p["pid"])]) for p in children)
    assert _loop(profile) == pytest.approx(total, abs=slack)


@timing
def test_a_shell_command_profiles_each_python_process(run_heatline, tmp_path):
    # `exit 0` last: bash would exec a last simple command in place of itself (next test).
    script = f"{sys.executable} {WORK} first; {sys.executable} {WORK} second; exit 0"
    argv = ["bash", "-c", script]
    profile, run = _profile(run_heatline, tmp_path, "--", *argv)
    truths = _truths(run)
    assert sorted(truths) == ["first", "second"]
    _check_processes(profile, truths, argv)
    assert profile["program"] == f"bash -c '{script}'" and profile["argv"] == argv
    assert profile["processes"][0]["exit"] == "exit 0"


@timing
def test_a_python_the_shell_execs_is_the_root(run_heatline, tmp_path):
    """bash execs its last command in its own process: that Python process is the command's
    root row (same pid), its work in the root's own profile."""
    script = f"{sys.executable} {WORK} first; {sys.executable} {WORK} second"
    profile, run = _profile(run_heatline, tmp_path, "--", "bash", "-c", script)
    truths = _truths(run)
    root, *children = profile["processes"]
    assert [p["pid"] for p in children] == [truths["first"]["pid"]]
    if root["pid"] != truths["second"]["pid"]:
        pytest.skip("this bash did not exec its last command")
    assert truths["first"]["ppid"] == root["pid"] and root["role"] == "command"
    for name, process in (("first", children[0]), ("second", root)):
        own = profile["process_profiles"][str(process["pid"])]
        assert _loop(own) == pytest.approx(truths[name]["busy_s"], abs=_tolerance_s(own))


@timing
def test_a_makefile_target_profiles_each_python_process(run_heatline, tmp_path):
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    (tmp_path / "Makefile").write_text(
        f"work:\n\t{sys.executable} {WORK} first\n\t{sys.executable} {WORK} second\n")
    profile, run = _profile(run_heatline, tmp_path, "--", "make", "-s", "work")
    truths = _truths(run)
    assert sorted(truths) == ["first", "second"]
    _check_processes(profile, truths, ["make", "-s", "work"])


def test_the_commands_exit_status_and_output_pass_through(run_heatline, tmp_path):
    """A command exiting 3 makes heatline exit 3; its output is on stdout, the report on
    stderr; the processes table says how each process ended."""
    script = f"{sys.executable} {WORK} first 5; echo shell says hi; exit 3"
    profile, run = _profile(run_heatline, tmp_path, "--", "bash", "-c", script, status=3)
    assert run.stdout.splitlines()[1:] == ["shell says hi"]
    root, child = profile["processes"]
    assert (root["exit"], child["exit"]) == ("exit 3", "exit 5")


def test_a_command_killed_by_a_signal_kills_heatline_alike(run_heatline, tmp_path):
    run = run_heatline("-q", "--", "bash", "-c", "kill -TERM $$", timeout=TIMEOUT_S,
                       cwd=str(tmp_path))
    assert run.returncode == -signal.SIGTERM, run.stderr


def test_a_python_command_is_its_own_root(run_heatline, tmp_path):
    """`heatline -- python x.py`: the command is the profiled Python process itself, one row."""
    profile, run = _profile(run_heatline, tmp_path, "--", sys.executable, WORK, "only")
    truth = _truths(run)["only"]
    (root,) = profile["processes"]
    assert (root["pid"], root["role"], root["exit"]) == (truth["pid"], "command", "exit 0")
    assert root["argv"] == [sys.executable, WORK, "only"]
    assert _loop(profile) == pytest.approx(truth["busy_s"], abs=_tolerance_s(profile))


def _console_script(tmp_path, name="hl-work"):
    """A console script in a directory of its own, as pip writes one: a #!python script
    calling command_work.main."""
    directory = tmp_path / "bin"
    directory.mkdir(exist_ok=True)
    script = directory / name
    script.write_text(f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {PROGRAMS!r})\n"
                      "from command_work import main\nif __name__ == '__main__':\n"
                      "    sys.exit(main())\n")
    script.chmod(0o755)
    return directory, script


def _path_with(directory):
    return {"PATH": f"{directory}{os.pathsep}{os.environ.get('PATH', '')}"}


@timing
def test_a_console_script_on_path_is_profiled_by_name(run_heatline, tmp_path):
    directory, script = _console_script(tmp_path)
    profile, run = _profile(run_heatline, tmp_path, "hl-work", "named", "4",
                            env=_path_with(directory), status=4)
    truth = _truths(run)["named"]
    # What python gives a script the shell found on PATH: its path as found there.
    assert truth["argv0"] == str(script)
    assert profile["program"] == str(script) and profile["argv"] == [str(script), "named", "4"]
    assert _loop(profile) == pytest.approx(truth["busy_s"], abs=_tolerance_s(profile))


def test_a_console_script_runs_as_when_run_directly(run_heatline, tmp_path):
    """Output, exit status and an uncaught exception's traceback as when the shell runs it."""
    directory, _ = _console_script(tmp_path)
    failing = directory / "hl-fail"
    failing.write_text(f"#!{sys.executable}\nprint('before')\nraise ValueError('bad input')\n")
    failing.chmod(0o755)
    env = dict(os.environ, **_path_with(directory))
    direct = subprocess.run(["hl-fail"], capture_output=True, text=True, env=env, check=False)
    profiled = run_heatline("-q", "hl-fail", text=True, env=_path_with(directory),
                            timeout=TIMEOUT_S, cwd=str(tmp_path))
    assert (profiled.returncode, profiled.stdout) == (direct.returncode, direct.stdout) == (
        1, "before\n")
    assert profiled.stderr == direct.stderr


def test_a_name_neither_file_nor_command(run_heatline, tmp_path):
    result = run_heatline("no-such-command-for-heatline", cwd=str(tmp_path))
    assert_one_error_line(result, "nor is 'no-such-command-for-heatline' a command on PATH")
    assert result.returncode == 2


def test_a_command_that_is_not_python_names_the_other_form(run_heatline, tmp_path):
    directory = tmp_path / "bin"
    directory.mkdir()
    tool = directory / "hl-shell-tool"
    tool.write_text("#!/bin/sh\necho hi\n")
    tool.chmod(0o755)
    result = run_heatline("hl-shell-tool", env=_path_with(directory), cwd=str(tmp_path))
    assert_one_error_line(result, "is not a Python script")
    assert "heatline -- hl-shell-tool" in result.stderr.decode()


@pytest.mark.parametrize("args, message", [
    (["--"], "no command after '--'"),
    (["-q", "--"], "no command after '--'"),
    (["--", "no-such-command-for-heatline"], "no command 'no-such-command-for-heatline' on PATH"),
    (["--", "./not-there"], "no such command: './not-there'"),
    (["--no-children", "--", "true"], "--no-children does not go with a command"),
], ids=repr)
def test_bad_commands(run_heatline, tmp_path, args, message):
    assert_one_error_line(run_heatline(*args, cwd=str(tmp_path)), message)


def test_after_run_a_double_dash_only_ends_the_options(run_heatline, tmp_path):
    """`heatline run -- -odd.py` runs the script -odd.py (heatline check relies on it)."""
    (tmp_path / "-odd.py").write_text("import sys\nprint(sys.argv)\n")
    run = run_heatline("run", "-q", "--", "-odd.py", "x", text=True, cwd=str(tmp_path))
    assert (run.returncode, run.stdout) == (0, "['-odd.py', 'x']\n"), run.stderr


def _unprofiled_interpreter(in_range):
    """Another CPython on this machine (an executable, not a wrapper script such as pyenv's
    shims) that heatline's engine is not built for, or None; ``in_range``: of a version
    heatline supports (carrier.SUPPORTED_VERSIONS), else of one it does not (2.7, 3.8)."""
    own = {tuple(v) for v in carrier.engine_versions()}
    candidates = [shutil.which(f"python3.{minor}") for minor in range(9, 16)]
    pyenv = "/root/.pyenv/versions"
    if os.path.isdir(pyenv):
        candidates += [os.path.join(pyenv, name, "bin", "python")
                       for name in sorted(os.listdir(pyenv))]
    for path in candidates:
        if not path or not os.path.isfile(path):
            continue
        with open(os.path.realpath(path), "rb") as f:
            if f.read(4) != b"\x7fELF":
                continue
        version = carrier.interpreter_version(path)
        low, high = carrier.SUPPORTED_VERSIONS
        if version is not None and version not in own and (low <= version <= high) == in_range:
            return path
    return None


@pytest.mark.parametrize("in_range", [True, False], ids=["supported", "unsupported"])
def test_an_interpreter_without_an_engine_is_left_alone(run_heatline, tmp_path, in_range):
    """A Python process heatline cannot profile runs as without heatline: no heatline module,
    PYTHONPATH and the environment as the command gave them."""
    other = _unprofiled_interpreter(in_range)
    if other is None:
        pytest.skip("no such CPython on this machine")
    probe = tmp_path / "probe.py"
    probe.write_text("import os, sys\nprint('%s %s %s' % (sorted(m for m in sys.modules if "
                     "'heatline' in m), os.environ.get('PYTHONPATH'), "
                     "'HEATLINE_CHILD' in os.environ))\n")  # Python 2.7 too
    run = run_heatline("-q", "--", other, str(probe), text=True, timeout=TIMEOUT_S,
                       cwd=str(tmp_path), env={"PYTHONPATH": "/some/where"})
    assert (run.returncode, run.stdout) == (0, "[] /some/where False\n"), run.stderr


def test_a_script_of_another_interpreter_is_run_in_heatlines_with_a_warning(run_heatline,
                                                                           tmp_path):
    """Its shebang names another environment's python: it runs in heatline's interpreter, as a
    script given by path does, and one warning line says so (the tool may not import there)."""
    other = tmp_path / "other-env" / "bin"
    other.mkdir(parents=True)
    (other / "python3").write_text("")
    directory = tmp_path / "bin"
    directory.mkdir()
    tool = directory / "hl-elsewhere"
    tool.write_text(f"#!{other / 'python3'}\nimport sys\nprint(sys.argv[0])\n")
    tool.chmod(0o755)
    run = run_heatline("-q", "hl-elsewhere", text=True, env=_path_with(directory),
                       cwd=str(tmp_path), timeout=TIMEOUT_S)
    assert (run.returncode, run.stdout) == (0, f"{tool}\n")
    assert run.stderr == (f"heatline: warning: hl-elsewhere's interpreter is {other / 'python3'};"
                          f" it runs in heatline's, {sys.executable} (heatline -- hl-elsewhere "
                          "runs it in its own)\n")


def test_ctrl_c_reaches_the_command_and_the_profile_is_written(tmp_path):
    """Ctrl-C (SIGINT to the terminal's process group): the command's Python process gets it
    and writes its profile; heatline waits for the command, writes the merged profile and dies
    of SIGINT as the command did."""
    ready = tmp_path / "ready"
    script = tmp_path / "waits.py"
    script.write_text("import pathlib, sys, time\n"
                      f"pathlib.Path({str(ready)!r}).write_text('')\n"
                      "time.sleep(60)\n")
    out = tmp_path / "profile.json"
    heatline = subprocess.Popen(
        [sys.executable, "-m", "heatline", "-q", "-o", str(out), "--", "bash", "-c",
         f"{sys.executable} {script}; exit 0"],
        start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        # A shell's background job (a CI runner's) starts with SIGINT ignored, which Python and
        # bash would inherit: Ctrl-C as at a terminal needs its default action.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        for _ in range(int(TIMEOUT_S / 0.05)):
            if ready.exists() or heatline.poll() is not None:
                break
            time.sleep(0.05)
        os.killpg(heatline.pid, signal.SIGINT)
        _, stderr = heatline.communicate(timeout=TIMEOUT_S)
    finally:
        if heatline.poll() is None:
            heatline.kill()
    # bash saw its child die of SIGINT and (non-interactive) died of it too.
    assert heatline.returncode == -signal.SIGINT, stderr
    assert "KeyboardInterrupt" in stderr
    with open(out) as f:
        profile = json.load(f)
    root, child = profile["processes"]
    assert (root["exit"], child["exit"]) == ("SIGINT", "SIGINT")
    assert str(script) in profile["files"]


def test_the_report_names_the_command_not_a_main_process(run_heatline, tmp_path):
    """The command ran no Python of its own: the summary's CPU shares and the peak line leave
    it out; the processes table lists it first."""
    script = f"{sys.executable} {WORK} first; exit 0"
    run = run_heatline("--", "bash", "-c", script, text=True, cwd=str(tmp_path),
                       timeout=TIMEOUT_S, env={"COLUMNS": "200"})
    assert run.returncode == 0, run.stderr
    report = run.stderr
    assert f"heatline profile of bash -c '{script}'" in report
    assert "main process" not in report and "1 command" not in report
    table = report[report.index("Processes"):].splitlines()
    assert " command " in table[3] and "python subprocess" in table[4]


def test_processes_start_after_the_command(run_heatline, tmp_path):
    """Every process's start is measured from the command's: none before it, the second
    Python process after the first one's end (the shell runs them in turn)."""
    for script in (f"{sys.executable} {WORK} first; {sys.executable} {WORK} second; exit 0",
                   f"{sys.executable} {WORK} first; {sys.executable} {WORK} second"):
        profile, _ = _profile(run_heatline, tmp_path, "--", "bash", "-c", script)
        processes = profile["processes"]
        assert all(p["start_s"] >= 0 for p in processes), processes
        first = next(p for p in processes if p["argv"][1:] == ["first"])
        later = [p for p in processes if p is not first and p["start_s"] > 0]
        assert all(p["start_s"] >= first["start_s"] + first["elapsed_s"] for p in later)


def test_sigterm_to_heatline_is_passed_on_to_the_command(tmp_path):
    """`kill PID` of heatline (a scheduler's timeout): the command gets the SIGTERM, its
    Python process writes its profile, and heatline dies of SIGTERM as the command did."""
    ready = tmp_path / "ready"
    script = tmp_path / "waits.py"
    script.write_text("import pathlib, time\n"
                      f"pathlib.Path({str(ready)!r}).write_text('')\n"
                      "time.sleep(60)\n")
    out = tmp_path / "profile.json"
    heatline = subprocess.Popen(
        [sys.executable, "-m", "heatline", "-q", "-o", str(out), "--", sys.executable,
         str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(int(TIMEOUT_S / 0.05)):
            if ready.exists() or heatline.poll() is not None:
                break
            time.sleep(0.05)
        heatline.send_signal(signal.SIGTERM)
        _, stderr = heatline.communicate(timeout=TIMEOUT_S)
    finally:
        if heatline.poll() is None:
            heatline.kill()
    assert heatline.returncode == -signal.SIGTERM, stderr
    with open(out) as f:
        profile = json.load(f)
    (root,) = profile["processes"]
    assert (root["role"], root["exit"]) == ("command", "SIGTERM")
    assert str(script) in profile["files"]
