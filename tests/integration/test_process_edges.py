"""The program must not notice heatline at a process's edges:
an exec of the main process, the real C environment a child inherits, a simulated SIGTERM,
an interpreter heatline cannot follow, a child ending in the middle of an import."""

import json
import os
import signal
import subprocess
import sys

import pytest


def _left_in(tmp):
    """What a run left in its temporary directory: nothing of its own (the run directory is
    gone) and an empty `heatline ctl` directory."""
    control = tmp / f"heatline-{os.getuid()}"
    left = [name for name in os.listdir(tmp) if name != control.name]
    return left + (os.listdir(control) if control.is_dir() else [])


def _private_tmp(tmp_path):
    directory = tmp_path / "tmp"
    directory.mkdir(exist_ok=True)
    return {"TMPDIR": str(directory)}


@pytest.mark.skipif(sys.version_info < (3, 10), reason="interrupt_main(signum) is 3.10+")
def test_interrupt_main_sigterm_is_a_no_op_while_sigterm_is_default(
    run_heatline, run_python, program, tmp_path
):
    """CPython's PyErr_SetInterruptEx does nothing while SIGTERM's handler is SIG_DFL; the
    guard's handler stands in for SIG_DFL, in the main process and in a profiled child, and
    a real SIGTERM still kills (the profile written first)."""
    script = program("interrupt_main_sigterm.py")
    expected = run_python(script, env=_private_tmp(tmp_path))
    assert expected.returncode == -signal.SIGTERM
    assert expected.stdout.decode().count("default again: still alive") == 2
    out = tmp_path / "profile.json"
    result = run_heatline("-q", "-o", str(out), script, env=_private_tmp(tmp_path))
    assert (result.returncode, result.stdout) == (expected.returncode, expected.stdout), (
        result.stderr.decode())
    with open(out) as f:
        profile = json.load(f)
    assert [p["exit"] for p in profile["processes"]] == ["SIGTERM", "SIGTERM"]
    assert _left_in(tmp_path / "tmp") == []


@pytest.mark.parametrize("where", ["def current_process", "_current_process ="])
def test_a_child_ending_in_the_middle_of_an_import_writes_its_profile(
    run_heatline, run_python, program, tmp_path, where
):
    """Labelling a multiprocessing child at its end must not run code of a module that may be
    half imported (or half torn down): AttributeError (partially initialized module) and
    NameError (_current_process) cost such children their profiles on 3.13."""
    script = program("exit_mid_import.py")
    expected = run_python(script, where, env=_private_tmp(tmp_path))
    assert expected.stdout == b"child exit status 0\n", expected.stderr
    out = tmp_path / "profile.json"
    result = run_heatline("-q", "-o", str(out), script, where, env=_private_tmp(tmp_path))
    assert (result.returncode, result.stdout, result.stderr) == (0, expected.stdout, b"")
    with open(out) as f:
        profile = json.load(f)
    # (Other warnings, such as the lock wait of a loaded machine, may come and go.)
    assert not [w for w in profile["warnings"] if _about_a_lost_profile(w)], profile["warnings"]
    assert [(p["role"], p["exit"]) for p in profile["processes"]] == [
        ("main", "exit 0"), ("fork child", "os._exit(0)")]
    assert _left_in(tmp_path / "tmp") == []


PYTHON27 = os.path.expanduser("~/.pyenv/versions/2.7.18/bin/python")


@pytest.mark.skipif(not os.path.exists(PYTHON27), reason=f"no Python 2.7 at {PYTHON27}")
def test_an_interpreter_heatline_cannot_profile_is_left_as_python_leaves_it(
    run_heatline, run_python, program, tmp_path
):
    """Python 2.7 (here pyenv's `python`, a link to python2.7) is not followed: no variables,
    no hook directory, and the program's own sitecustomize runs, as under python."""
    site_dir = tmp_path / "site_dir"
    site_dir.mkdir()
    (site_dir / "sitecustomize.py").write_text("print('own sitecustomize ran')\n")
    args = (program("other_python_child.py"), PYTHON27, str(site_dir))
    expected = run_python(*args, env=_private_tmp(tmp_path))
    assert expected.returncode == 0, expected.stderr
    assert expected.stdout.decode().count("own sitecustomize ran") == 3
    out = tmp_path / "profile.json"
    result = run_heatline("-q", "-o", str(out), *args, env=_private_tmp(tmp_path))
    assert (result.returncode, result.stdout, result.stderr) == (
        0, expected.stdout, expected.stderr)
    with open(out) as f:
        assert "processes" not in json.load(f)  # no child was profiled
    assert _left_in(tmp_path / "tmp") == []


@pytest.mark.skipif(not os.path.exists(PYTHON27), reason=f"no Python 2.7 at {PYTHON27}")
def test_the_hook_backs_off_in_an_interpreter_it_cannot_profile(run_python, tmp_path):
    """Should the rule ever follow one wrongly, the hook itself (written for any Python) puts
    the environment and sys.path back and runs the program's own sitecustomize."""
    from heatline.run import carrier

    site_dir = tmp_path / "site_dir"
    site_dir.mkdir()
    (site_dir / "sitecustomize.py").write_text("print('own sitecustomize ran')\n")
    code = ("import os, sys; print(sorted(k for k in os.environ if 'HEATLINE' in k)); "
            "print(os.environ['PYTHONPATH']); print([p for p in sys.path if 'heatline' in p])")
    # The suite's own variables (HEATLINE_SANITIZED, CI's HEATLINE_REQUIRE_*) are left out, so
    # that any HEATLINE variable the program sees is one the hook failed to take back.
    inherited = {k: v for k, v in os.environ.items() if "HEATLINE" not in k}
    env = dict(inherited, HEATLINE_CHILD="00",
               PYTHONPATH=carrier.HOOK_DIR + os.pathsep + str(site_dir))
    result = subprocess.run([PYTHON27, "-c", code], capture_output=True, env=env, check=False)
    assert (result.returncode, result.stderr) == (0, b"")
    assert result.stdout.decode().splitlines() == [
        "own sitecustomize ran", "[]", str(site_dir), "[]"]


def test_python_children_inherit_the_c_environment(run_heatline, run_python, program, tmp_path):
    """With no environment given, a child gets the C environment as exec passes it on (after
    the program's preexec_fn), plus heatline's variables, which its hook takes out again."""
    script = program("c_environ_children.py")
    expected = run_python(script, env=_private_tmp(tmp_path))
    assert expected.returncode == 0, expected.stderr
    assert b"inherited ['put', None, 'setenv', None] /put/path\n" in expected.stdout
    assert b"preexec_fn ['put', None, 'setenv', 'apple'] /put/path\n" in expected.stdout
    out = tmp_path / "profile.json"
    result = run_heatline("-q", "-o", str(out), script, env=_private_tmp(tmp_path))
    assert (result.returncode, result.stdout, result.stderr) == (
        0, expected.stdout, expected.stderr)
    with open(out) as f:
        profile = json.load(f)
    # Every child profiled, none missing (a preexec_fn's fork is not a child of its own).
    assert [(p["role"], p["exit"]) for p in profile["processes"]] == [
        ("main", "exit 0"), *[("python subprocess", "exit 0")] * 3,
        ("fork child", "exec"), ("python subprocess", "exit 0")]
    assert not [w for w in profile["warnings"] if _about_a_lost_profile(w)], profile["warnings"]
    assert _left_in(tmp_path / "tmp") == []


def _about_a_lost_profile(warning):
    """A warning that a process's profile was lost or unreadable (not one that a short part of
    a run, sampled only in library code, had no time in user code: '--profile-all')."""
    return "profile" in warning.replace("--profile-all", "")


def _line_time(profile, path, text):
    """The time of the lines whose source holds ``text`` (exec_main.py marks both lines of a
    loop)."""
    lines = [line for line in profile["files"][path]["lines"] if text in line["source"]]
    assert lines, text
    return sum(line["python_s"] + line["native_s"] + line["system_s"]
               + line.get("cpu_wait_s", 0.0) for line in lines)


def _assert_spun(profile, script, *markers):
    """exec_main.py's parts each spin 0.2 s of CPU time, so at least that long on the wall: a
    sample falls in each unless one gap between samples spanned it whole (a sampler kept off
    the CPUs on a busy machine; the run says how long its longest gap was)."""
    gap = profile["max_sample_gap_s"]
    for marker in markers:
        assert _line_time(profile, script, marker) > 0 or gap >= 0.2, (marker, gap)


# Buffered output must be lost at an exec, as under python: stdout is a pipe here.
BUFFERED = {"PYTHONUNBUFFERED": ""}


@pytest.mark.parametrize("options", [(), ("--no-children",)])
def test_an_exec_of_python_hands_the_run_over(run_heatline, run_python, program, tmp_path,
                                              options):
    """os.execv of Python in the main process: the exec'd program goes on with the run (here
    twice), and the profile at its end holds both programs' lines, as one main process, and
    the fork child that ran across the exec; nothing is left behind."""
    script = program("exec_main.py")
    env = dict(_private_tmp(tmp_path), **BUFFERED)
    expected = run_python(script, "python", env=env)
    assert (expected.returncode, expected.stdout) == (
        0, b"before the exec\nafter the exec\nthird program\n"), expected.stderr
    out = tmp_path / "profile.json"
    result = run_heatline("-q", "-o", str(out), *options, script, "python", env=env)
    assert (result.returncode, result.stdout, result.stderr) == (
        0, expected.stdout, expected.stderr)
    with open(out) as f:
        profile = json.load(f)
    assert (profile["program"], profile["argv"]) == (script, [script, "python"])
    _assert_spun(profile, script, "# before the exec", "# after the exec")
    assert not [w for w in profile["warnings"] if _about_a_lost_profile(w)], profile["warnings"]
    if options:
        assert "processes" not in profile
    else:
        assert [(p["role"], p["exit"]) for p in profile["processes"]] == [
            ("main", "exit"), ("fork child", "os._exit(0)")]
        assert profile["processes"][1]["ppid"] == profile["processes"][0]["pid"]
    assert _left_in(tmp_path / "tmp") == []


def test_an_exec_of_another_program_ends_the_run_there(run_heatline, run_python, program,
                                                        tmp_path):
    """os.execv of /bin/echo: the profile and report are written before it, the program's
    unflushed output is lost as under python, and nothing outlives the exec."""
    script = program("exec_main.py")
    env = dict(_private_tmp(tmp_path), **BUFFERED)
    expected = run_python(script, "echo", env=env)
    assert (expected.returncode, expected.stdout) == (0, b"before the exec\nechoed\n")
    out = tmp_path / "profile.json"
    result = run_heatline("-o", str(out), script, "echo", env=env)
    assert (result.returncode, result.stdout) == (0, expected.stdout)
    assert "heatline profile of" in result.stderr.decode()
    with open(out) as f:
        profile = json.load(f)
    _assert_spun(profile, script, "# before the exec")
    assert _left_in(tmp_path / "tmp") == []


@pytest.mark.parametrize("mode, error", [("missing", "No such file or directory"),
                                         ("broken", "Exec format error")])
def test_an_exec_that_fails_leaves_the_run_going(run_heatline, run_python, program, tmp_path,
                                                 mode, error):
    """A path that is no executable file is left to fail untouched; an exec that fails after
    the run was handed over (an empty file named like this Python) resumes it: the part
    written for the exec and the rest are one process, nothing counted twice."""
    script = program("exec_main.py")
    args = (script, mode, str(tmp_path))
    expected = run_python(*args, env=_private_tmp(tmp_path))
    assert expected.stdout == f"exec failed: {error}\n".encode(), expected.stderr
    out = tmp_path / "profile.json"
    result = run_heatline("-q", "-o", str(out), *args, env=_private_tmp(tmp_path))
    assert (result.returncode, result.stdout, result.stderr) == (0, expected.stdout, b"")
    with open(out) as f:
        profile = json.load(f)
    assert "processes" not in profile
    _assert_spun(profile, script, "# before the exec", "# after the exec")
    # Nothing counted twice: one thread at a time ran, so its sampled time cannot exceed the
    # run's wall time but by the ticks at either end.
    assert profile["totals"]["attributed_s"] <= (
        profile["elapsed_s"] + 2 * profile["max_sample_gap_s"])
    assert _left_in(tmp_path / "tmp") == []
