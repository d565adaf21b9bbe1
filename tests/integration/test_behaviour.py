"""A program runs under heatline exactly as under plain python: output, input, exit status,
tracebacks, __main__, sys.argv, sys.path[0], signals, threads, Ctrl-C and multiprocessing."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

import heatline
from heatline import data as profile

HEATLINE_DIR = os.path.dirname(os.path.abspath(heatline.__file__))


def test_stdout_is_byte_identical_to_plain_python(run_heatline, run_python, program):
    plain = run_python(program("output.py"))
    profiled = run_heatline(program("output.py"))
    assert profiled.returncode == plain.returncode == 0
    assert profiled.stdout == plain.stdout
    assert b"heatline" in profiled.stderr  # the report went to stderr, not stdout


AST_CLASSES = """\
import gc
print(sum(1 for o in gc.get_objects() if isinstance(o, type) and o.__module__ == "ast"))
"""


def test_the_program_finds_no_classes_of_the_ast_module(run_heatline, run_python, tmp_path):
    """python runs a script without the ast module's classes; compile()'s test of whether its
    source is an AST would make them (over a hundred, in gc.get_objects()), so heatline
    compiles the script as python does (engine/session.py, compile_program).
    heatline runs from a copy with its bytecode, as an installed one does (the suite's own may
    have none, and importlib then compiles heatline's modules with compile() too)."""
    import compileall
    import shutil

    root = tmp_path / "installed"
    shutil.copytree(HEATLINE_DIR, root / "heatline", ignore=shutil.ignore_patterns("__pycache__"))
    assert compileall.compile_dir(str(root / "heatline"), quiet=1)
    script = tmp_path / "ast_classes.py"
    script.write_text(AST_CLASSES)
    plain = run_python(str(script))
    env = {**os.environ, "PYTHONPATH": str(root)}
    profiled = run_heatline("-q", "-o", str(tmp_path / "p.json"), str(script), env=env)
    assert plain.returncode == profiled.returncode == 0, profiled.stderr
    assert profiled.stdout == plain.stdout == b"0\n"


def test_stdin_is_passed_through(run_heatline, program):
    data = b"line one\nline two\n\x00\xff binary tail"
    result = run_heatline("-q", program("echo_stdin.py"), input=data)
    assert result.returncode == 0
    assert result.stdout == data


def test_sys_exit_status_is_kept(run_heatline, program):
    result = run_heatline("-q", program("exits.py"), "3")
    assert result.returncode == 3
    assert result.stdout == b"before exit\n"


def test_sys_exit_with_message_prints_it_and_exits_1(run_heatline, run_python, program):
    plain = run_python(program("exits.py"), "bye now")
    result = run_heatline("-q", program("exits.py"), "bye now")
    assert result.returncode == plain.returncode == 1
    assert result.stderr == plain.stderr == b"bye now\n"


def test_uncaught_exception_prints_plain_pythons_traceback(run_heatline, run_python, program):
    plain = run_python(program("exits.py"), "raise")
    result = run_heatline("-q", program("exits.py"), "raise")
    assert result.returncode == plain.returncode == 1
    assert result.stderr == plain.stderr
    traceback = result.stderr.decode()
    assert "RuntimeError: while doing the outer thing" in traceback
    assert HEATLINE_DIR not in traceback and "runpy" not in traceback


def test_uncaught_exception_still_writes_profile_and_report(run_heatline, program, profile_path):
    result = run_heatline("-o", profile_path, program("exits.py"), "raise", text=True)
    assert result.returncode == 1
    assert result.stderr.startswith("Traceback (most recent call last):")
    # The report follows the traceback's last line (the report may quote the raising line,
    # RuntimeError and all, when a sample fell on it: split at the traceback's end only).
    _, end, report = result.stderr.partition("RuntimeError: while doing the outer thing\n")
    assert end and "heatline profile of" in report, result.stderr
    assert profile.load(profile_path)["argv"] == [program("exits.py"), "raise"]


@pytest.mark.parametrize("relative", [False, True], ids=["absolute", "relative"])
def test_main_module_argv_and_path0_match_plain_python(run_heatline, run_python, program, relative):
    script = program("introspect.py")
    cwd = os.path.dirname(os.path.dirname(script))
    if relative:
        script = os.path.relpath(script, cwd)
    args = [script, "--epochs", "3", "-o", "not-for-heatline"]
    plain = run_python(*args, cwd=cwd)
    result = run_heatline("-q", *args, cwd=cwd)
    assert result.returncode == plain.returncode == 0, result.stderr
    assert result.stdout == plain.stdout
    seen = json.loads(result.stdout)
    assert seen["__name__"] == "__main__"
    assert seen["main module is this one"]
    assert seen["argv"] == args
    assert seen["path0"] == os.path.dirname(program("introspect.py"))
    assert not os.path.exists(os.path.join(cwd, "not-for-heatline"))


def test_dash_m_module_with_args_matches_python_dash_m(run_heatline, run_python, program):
    cwd = os.path.dirname(program("hlpkg"))
    plain = run_python("-m", "hlpkg.report", "a", "-q", cwd=cwd)
    result = run_heatline("-q", "-m", "hlpkg.report", "a", "-q", cwd=cwd)
    assert result.returncode == plain.returncode == 0, result.stderr
    assert result.stdout == plain.stdout
    seen = json.loads(result.stdout)
    assert seen["__name__"] == "__main__" and seen["__spec__"] == "hlpkg.report"
    assert seen["argv"] == [program(os.path.join("hlpkg", "report.py")), "a", "-q"]
    assert seen["path0"] == cwd


def test_dash_m_package_runs_its_main_and_keeps_exit_status(run_heatline, run_python, program):
    cwd = os.path.dirname(program("hlpkg"))
    plain = run_python("-m", "hlpkg", "4", cwd=cwd)
    result = run_heatline("-q", "-m", "hlpkg", "4", cwd=cwd)
    assert result.returncode == plain.returncode == 4
    assert result.stdout == plain.stdout == b"hlpkg main ['4']\n"


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symlinks")
def test_symlinked_script_gets_the_real_directory_as_path0(
    run_heatline, run_python, program, tmp_path
):
    link = tmp_path / "link.py"
    link.symlink_to(program("introspect.py"))
    plain = run_python(str(link), cwd=str(tmp_path))
    result = run_heatline("-q", str(link), cwd=str(tmp_path))
    assert result.returncode == plain.returncode == 0, result.stderr
    assert result.stdout == plain.stdout
    seen = json.loads(result.stdout)
    assert seen["__file__"] == str(link)
    assert seen["path0"] == os.path.dirname(program("introspect.py"))


def test_directory_with_main_runs_like_python(run_heatline, run_python, program, tmp_path):
    app = tmp_path / "app"
    app.mkdir()
    with open(program("introspect.py")) as source:
        (app / "__main__.py").write_text(source.read())
    plain = run_python("app", "x", cwd=str(tmp_path))
    result = run_heatline("-q", "app", "x", cwd=str(tmp_path))
    assert result.returncode == plain.returncode == 0, result.stderr
    assert result.stdout == plain.stdout
    assert json.loads(result.stdout)["path0"] == str(app)


@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="needs setitimer")
def test_programs_own_itimer_real_alarms_keep_firing(run_heatline, program):
    result = run_heatline("-q", program("alarm.py"), text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    # The loop stops at the 20th alarm; one more can come before the program turns its timer
    # off (5 ms later, or more on a loaded machine: 21 seen with two busy loops beside the run,
    # as under python). Fewer would mean alarms lost, and exit status 1.
    label, count = result.stdout.split()
    assert label == "alarms:" and int(count) >= 20, result.stdout


def test_non_daemon_thread_outliving_main_module_is_waited_for_and_profiled(
    run_heatline, run_python, program, profile_path
):
    plain = run_python(program("lingering_thread.py"), text=True)
    result = run_heatline(
        "-q",
        "-o",
        profile_path,
        "--sampling-interval",
        "0.002",
        program("lingering_thread.py"),
        text=True,
    )
    assert result.returncode == plain.returncode == 0, result.stderr
    assert result.stdout == plain.stdout
    assert result.stdout.splitlines()[-2:] == ["worker done", "atexit handler ran"]
    functions = profile.load(profile_path)["files"][program("lingering_thread.py")]["functions"]
    worker = next(f for f in functions if f["qualname"] == "busy_worker")
    # (It ran, or on a busy machine waited for a CPU to run.)
    assert worker["python_s"] + worker["native_s"] + worker["cpu_wait_s"] > 0.1
    assert len(profile.load(profile_path)["threads"]) >= 2


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_sigint_ends_like_python_and_still_writes_the_profile(program, profile_path):
    process = subprocess.Popen(
        [sys.executable, "-m", "heatline", "-o", profile_path, program("spin_forever.py")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        # A job started in the background inherits SIGINT ignored, and python then installs
        # no KeyboardInterrupt handler: give the child the default disposition, as a shell
        # does for a foreground program.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        assert process.stdout.readline() == b"ready\n"
        time.sleep(0.2)
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=30)
    finally:
        process.kill()
        process.wait()
    assert process.returncode == -signal.SIGINT
    text = stderr.decode()
    assert "Traceback (most recent call last):" in text and "KeyboardInterrupt" in text
    assert HEATLINE_DIR not in text
    assert "heatline profile of" in text  # the report is still shown
    spin = profile.load(profile_path)["files"][program("spin_forever.py")]
    assert any(f["qualname"] == "spin" for f in spin["functions"])


def test_spawned_process_can_unpickle_main_module_class(run_heatline, program):
    result = run_heatline("-q", program("spawn_pickle.py"), text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "[(2, 4), (6, 8)]\n"


def test_off_starts_paused_until_program_calls_resume(run_heatline, program, profile_path):
    result = run_heatline(
        "-q",
        "--off",
        "-o",
        profile_path,
        "--sampling-interval",
        "0.002",
        program("resume_midway.py"),
        text=True,
    )
    assert result.returncode == 0, result.stderr
    data = profile.load(profile_path)
    functions = data["files"][program("resume_midway.py")]["functions"]
    names = {f["qualname"] for f in functions}
    assert "profiled_part" in names
    assert "unprofiled_part" not in names
    # The one period on: after the first 0.15 s phase, lasting the 0.15 s phase.
    [[start, end]] = data["profiled_periods"]
    assert 0.15 <= start and 0.15 <= end - start and end <= data["elapsed_s"] - 0.15


def test_the_report_says_how_much_of_the_elapsed_time_was_profiled(run_heatline, program,
                                                                    profile_path):
    """After --off and resume()/pause() the footer says how much of the elapsed time the
    figures cover (it said only "elapsed 0.47 s" of a run profiled for 0.15 s of it), and so
    does the HTML page; a run never paused says nothing of the kind."""
    import re

    from heatline.renderers.html import page_data

    result = run_heatline("--off", "-o", profile_path, program("resume_midway.py"), text=True,
                          env={"COLUMNS": "200"})
    assert result.returncode == 0, result.stderr
    data = profile.load(profile_path)
    [[start, end]] = data["profiled_periods"]
    footer = re.search(r"elapsed ([0-9.]+) s, of which ([0-9.]+) s profiled;", result.stderr)
    assert footer, result.stderr
    assert float(footer.group(1)) == round(data["elapsed_s"], 3)
    assert float(footer.group(2)) == round(end - start, 3)
    assert page_data(data)["summary"]["profiled_s"] == pytest.approx(end - start)
    whole = run_heatline(program("busy.py"), text=True, env={"COLUMNS": "200"})
    assert whole.returncode == 0, whole.stderr
    assert "profiled" not in whole.stderr.split("elapsed ")[-1]
    # Never turned on: the report says so instead of blaming the sampling interval.
    never = run_heatline("--off", program("busy.py"), text=True, env={"COLUMNS": "200"})
    assert never.returncode == 0, never.stderr
    assert "profiling was never on (started with --off" in never.stderr


def test_internal_failure_at_exit_is_one_line_and_keeps_exit_status(
    run_heatline, program, profile_path
):
    result = run_heatline("-o", profile_path, program("broken_at_exit.py"), text=True)
    assert result.returncode == 5
    assert result.stderr.startswith("heatline: internal error: ")
    assert len(result.stderr.splitlines()) == 1
    profile.load(profile_path)  # written before the report failed


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_forked_child_exiting_normally_does_not_write_a_report(run_heatline, program):
    result = run_heatline(program("forks.py"), text=True)
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.split()) == ["child", "parent"]
    assert result.stderr.count("heatline profile of") == 1


_LAUNCHER = """#!/usr/bin/env python3
# -*- coding: utf-8 -*-
import re
import sys
from {module} import main
if __name__ == '__main__':
    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])
    sys.exit(main())
"""


def test_a_console_script_launcher_is_library_code(run_heatline, tmp_path):
    """A launcher as pip writes it (here for the standard library's timeit, and for a module of
    the user's beside it) charges nothing to its `sys.exit(main())` line: the library's time
    is outside user code, the user's module keeps its own."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "stdlib-tool").write_text(_LAUNCHER.format(module="timeit"))
    (bin_dir / "user-tool").write_text(_LAUNCHER.format(module="usertool"))
    (bin_dir / "usertool.py").write_text(
        "import time\n\n\ndef main():\n    end = time.process_time() + 0.3\n"
        "    while time.process_time() < end:\n        pass\n")
    out = tmp_path / "stdlib.json"
    run = run_heatline("-q", "-o", str(out), str(bin_dir / "stdlib-tool"), "-n", "3", "-r", "3",
                       "sum(range(10 ** 6))", text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    profile = json.loads(out.read_text())
    assert str(bin_dir / "stdlib-tool") not in profile["files"], list(profile["files"])
    assert profile["totals"]["unattributed_s"] > 0  # timeit's work, in no user line
    out = tmp_path / "user.json"
    run = run_heatline("-q", "-o", str(out), str(bin_dir / "user-tool"), text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    profile = json.loads(out.read_text())
    assert list(profile["files"]) == [str(bin_dir / "usertool.py")]
    mine = profile["files"][str(bin_dir / "usertool.py")]
    assert (mine["python_pct"] + mine["native_pct"] + mine["system_pct"]
            + mine.get("cpu_wait_pct", 0.0)) == pytest.approx(100.0, abs=0.002)  # 4 roundings


def _run_console_script(argv, cwd, out):
    env = {k: v for k, v in os.environ.items()
           if k not in ("FORCE_COLOR", "NO_COLOR", "COLUMNS", "LINES")}
    run = subprocess.run([argv[0], "-o", str(out), *argv[1:]], cwd=str(cwd), env=env,
                         capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 0, run.stderr
    return run, json.loads(out.read_text())


def test_heatline_run_by_a_relative_path_is_not_the_program(program, tmp_path):
    """heatline's own console script, run as `./venv/bin/heatline` or `../x/venv/bin/heatline`
    (Python then names it cwd + "/" + the path as given, with its "." or ".."), is library code
    as when run by an absolute path: a script keeps all its time, and a library module run with
    -m leaves no user code at all instead of charging the launcher's `sys.exit(main())`."""
    launcher = os.path.join(os.path.dirname(sys.executable), "heatline")
    if not os.path.isfile(launcher):
        pytest.skip(f"no console script {launcher} (heatline not installed into this venv)")
    venv = os.path.dirname(os.path.dirname(launcher))
    here = tmp_path / "elsewhere"
    here.mkdir()
    spellings = [
        (os.path.dirname(venv), os.path.join(".", os.path.basename(venv), "bin", "heatline")),
        (str(here), os.path.relpath(launcher, str(here))),
    ]
    assert spellings[1][1].startswith(os.pardir + os.sep)
    busy = program("busy.py")
    for n, (cwd, argv0) in enumerate(spellings):
        run, profile = _run_console_script([argv0, busy], cwd, tmp_path / f"script{n}.json")
        assert list(profile["files"]) == [busy], (argv0, list(profile["files"]))
        assert "bin/heatline" not in run.stderr, (argv0, run.stderr)
        # timeit's loop, well over a sampling interval of CPU time, all in the standard library
        run, profile = _run_console_script(
            [argv0, "-m", "timeit", "-n", "1000", "-r", "50", "sum(range(1000))"],
            cwd, tmp_path / f"module{n}.json")
        assert profile["files"] == {}, (argv0, list(profile["files"]))
        assert profile["samples"] > 0
        assert any(w.startswith("no time was spent in user code") for w in profile["warnings"])
        assert "bin/heatline" not in json.dumps([profile["summary"], profile["peak_at"]])
        assert "bin/heatline" not in run.stderr, (argv0, run.stderr)
