"""The program must not notice the profiler: its shutdown, its files, its exit status; and
heatline must not lose or mangle what it writes (its output, argv, the -o file, the report)."""

import json
import os
import shutil
import signal
import stat
import subprocess
import sys

import pytest

from heatline import data as profile


def _default_sigint():
    # A job started in the background inherits SIGINT ignored; a foreground program has the
    # default disposition, which is what these tests are about.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _files(directory):
    return {name: (directory / name).read_text() for name in sorted(os.listdir(directory))}


def test_uncaught_keyboard_interrupt_keeps_pythons_shutdown(
    run_heatline, run_python, program, tmp_path
):
    plain, profiled = tmp_path / "plain", tmp_path / "profiled"
    plain.mkdir()
    profiled.mkdir()
    script = program("keyboard_interrupt_data.py")
    expected = run_python(script, str(plain), preexec_fn=_default_sigint)
    assert expected.returncode == -signal.SIGINT
    assert _files(plain) == {
        "atexit.txt": "atexit ran",
        "buffered.txt": "data the program wrote",
    }
    assert expected.stdout == b"before the interrupt\nfinalizer ran\n"
    # Several runs: whether the report's own work disturbs the SIGINT exit can vary from run
    # to run.
    for run in range(4):
        out = tmp_path / f"profile{run}.json"
        result = run_heatline("-o", str(out), script, str(profiled), preexec_fn=_default_sigint)
        assert result.returncode == -signal.SIGINT, result.stderr.decode()
        assert result.stdout == expected.stdout
        assert _files(profiled) == _files(plain)
        stderr = result.stderr.decode()
        # The traceback once, as python prints it, then the report.
        assert stderr.startswith(expected.stderr.decode()), stderr
        assert stderr.count("Traceback (most recent call last):") == 1
        assert "heatline profile of" in stderr
        assert profile.load(str(out))["program"] == script
        for name in os.listdir(profiled):
            os.unlink(profiled / name)


def test_outfile_keeps_its_mode_and_symlink(run_heatline, program, tmp_path):
    target = tmp_path / "kept.json"
    target.write_text("old")
    os.chmod(target, 0o600)
    link = tmp_path / "link.json"
    link.symlink_to(target)
    result = run_heatline("-q", "-o", str(link), program("output.py"))
    assert result.returncode == 0, result.stderr
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o600
    assert profile.load(str(target))["program"] == program("output.py")
    assert sorted(os.listdir(tmp_path)) == ["kept.json", "link.json"]  # no temporary left


def test_new_outfile_gets_the_umask_mode(run_heatline, program, tmp_path):
    out = tmp_path / "new.json"
    result = run_heatline(
        "-q", "-o", str(out), program("output.py"), preexec_fn=lambda: os.umask(0o027)
    )
    assert result.returncode == 0, result.stderr
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o640


def test_outfile_that_is_the_program_is_refused(run_heatline, program, tmp_path):
    script = tmp_path / "victim.py"
    shutil.copy(program("output.py"), script)
    before = script.read_bytes()
    alias = tmp_path / "alias.py"
    alias.symlink_to(script)
    for outfile in (str(script), str(alias)):
        result = run_heatline("-o", outfile, str(script))
        assert result.returncode == 2
        assert result.stdout == b""  # the program did not run
        lines = result.stderr.decode().splitlines()
        assert len(lines) == 1 and lines[0].startswith("heatline: error: "), lines
        assert "over the program itself" in lines[0]
        assert script.read_bytes() == before


def test_failed_write_is_a_one_line_error_and_a_failure_status(
    run_heatline, run_python, program, tmp_path
):
    expected = run_python(program("output.py"))
    result = run_heatline("-o", "/dev/full", program("output.py"))
    assert result.returncode == 1
    assert result.stdout == expected.stdout
    stderr = result.stderr.decode()
    assert "Traceback" not in stderr and "internal error" not in stderr
    assert stderr.splitlines() == [
        "heatline: error: can't write the profile to '/dev/full': "
        "[Errno 28] No space left on device"
    ]
    # A program that failed keeps its own status.
    failing = tmp_path / "fails.py"
    failing.write_text("import sys\nprint('out')\nsys.exit(3)\n")
    result = run_heatline("-q", "-o", "/dev/full", str(failing))
    assert result.returncode == 3
    assert result.stdout == b"out\n"
    assert result.stderr.decode().startswith("heatline: error: can't write the profile")


def test_argv_that_is_not_utf8_is_kept_in_the_profile(
    run_heatline, run_python, program, profile_path
):
    args = [b"\xff\xfe-not-utf8", "caf\u00e9".encode(), b"plain"]
    expected = run_python(program("argv_echo.py"), *args)
    result = run_heatline("-q", "-o", profile_path, program("argv_echo.py"), *args)
    assert result.returncode == 0, result.stderr
    assert result.stdout == expected.stdout
    assert result.stderr == b""
    with open(profile_path, "rb") as f:
        raw = f.read()
    raw.decode("utf-8")  # the file stays UTF-8
    assert "\\udcff\\udcfe-not-utf8" in raw.decode()  # the undecodable bytes, escaped
    data = profile.load(profile_path)
    assert [os.fsencode(arg) for arg in data["argv"][1:]] == args
    json.loads(raw)  # and plain JSON


SHADOWING = ("json", "random", "rich", "pygments", "datetime", "signal", "typing", "re", "enum",
             "argparse", "shutil", "locale", "linecache", "collections", "functools")


def test_program_gets_its_own_modules_and_heatline_gets_its_own(
    run_heatline, run_python, program, profile_path
):
    # The program's directory holds json.py, rich.py, re.py, typing.py...: it must import
    # those, as under python (not copies heatline imported first), and heatline's work at
    # exit must import its own (not the program's), so the profile and report are written.
    main = program("shadowing/main.py")
    expected = run_python(main)
    assert expected.returncode == 0, expected.stderr
    # A module the interpreter imports as it starts (3.15: linecache) is its own under python
    # too; heatline must then give the program that one as well (the same stdout, below).
    started = run_python("-c", "import sys; print(*sys.modules)").stdout.decode().split()
    for name in SHADOWING:
        if name not in started:
            assert f"{name} {name} of the program\n".encode() in expected.stdout
    result = run_heatline("-o", profile_path, main)
    assert result.returncode == 0, result.stderr
    assert result.stdout == expected.stdout
    stderr = result.stderr.decode()
    assert "heatline profile of" in stderr and "error" not in stderr, stderr
    data = profile.load(profile_path)
    assert data["program"] == main
    assert data["files"][main]["lines"]  # the loop was sampled


def test_script_named_like_a_module_heatline_imports_runs_once(
    run_heatline, run_python, tmp_path, profile_path
):
    for name in ("json", "random", "rich"):
        script = tmp_path / f"{name}.py"
        script.write_text("print('the script ran')\n")
        expected = run_python(str(script))
        result = run_heatline("-o", profile_path, str(script))
        assert result.returncode == 0, result.stderr
        assert result.stdout == expected.stdout == b"the script ran\n"
        assert "heatline profile of" in result.stderr.decode()
        assert profile.load(profile_path)["program"] == str(script)
        os.unlink(profile_path)


def test_broken_excepthook_is_reported_like_python(run_heatline, run_python, tmp_path):
    script = tmp_path / "hook.py"
    script.write_text(
        "import sys\n"
        "def hook(*args):\n"
        "    raise ValueError('the hook is broken')\n"
        "sys.excepthook = hook\n"
        "raise KeyError('the program failed')\n"
    )
    expected = run_python(str(script))
    assert b"Error in sys.excepthook:" in expected.stderr
    result = run_heatline("-q", str(script))
    assert result.returncode == expected.returncode == 1
    assert result.stderr == expected.stderr


def test_compiled_script_runs_as_under_python(run_heatline, run_python, tmp_path, profile_path):
    import py_compile

    source = tmp_path / "compiled.py"
    source.write_text("import sys\nprint('compiled', __file__ == sys.argv[0], sys.argv[1:])\n")
    pyc = str(tmp_path / "compiled.pyc")
    py_compile.compile(str(source), cfile=pyc, doraise=True)
    source.unlink()
    expected = run_python(pyc, "arg")
    assert expected.returncode == 0, expected.stderr
    result = run_heatline("-q", "-o", profile_path, pyc, "arg")
    assert result.returncode == 0, result.stderr
    assert result.stdout == expected.stdout
    assert profile.load(profile_path)["program"] == pyc


def test_report_goes_to_the_process_stderr_whatever_sys_stderr_is(run_heatline, tmp_path):
    log = tmp_path / "log.txt"
    script = tmp_path / "rebinds.py"
    script.write_text(
        "import sys\n"
        f"sys.stderr = open({str(log)!r}, 'w')\n"
        "print('the program logs this', file=sys.stderr)\n"
    )
    result = run_heatline(str(script))
    assert result.returncode == 0, result.stderr
    assert log.read_text() == "the program logs this\n"
    assert result.stdout == b""
    assert result.stderr.decode().startswith("heatline profile of")

    script.write_text("import sys\nsys.stderr = None\nprint('out')\n")
    result = run_heatline(str(script))
    assert result.returncode == 0, result.stderr
    assert result.stdout == b"out\n"
    assert result.stderr.decode().startswith("heatline profile of")


def _terminated(command):
    """Run command, send SIGTERM once it printed 'ready', return (status, stdout, stderr).

    The programs rely on stdout being block-buffered (what was not flushed is lost when SIGTERM
    kills them), so PYTHONUNBUFFERED is not passed on: with it, whether 'never flushed' gets out
    depends on how fast the signal arrives (seen on CI)."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONUNBUFFERED"}
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        out = b""
        while not out.endswith(b"ready\n"):
            line = process.stdout.readline()
            assert line, process.stderr.read()
            out += line
        process.send_signal(signal.SIGTERM)
        rest, err = process.communicate(timeout=120)
    finally:
        process.kill()
        process.wait()
    return process.returncode, out + rest, err


def test_sigterm_writes_the_profile_then_dies_of_sigterm(program, profile_path):
    script = program("sigterm_default.py")
    expected = _terminated([sys.executable, script])
    assert expected[:2] == (-signal.SIGTERM, b"default: True\nready\n")
    status, out, err = _terminated([sys.executable, "-m", "heatline", "-o", profile_path, script])
    assert (status, out) == expected[:2], err
    assert "heatline profile of" in err.decode()
    functions = profile.load(profile_path)["files"][script]["functions"]
    assert any(function["qualname"] == "spin" for function in functions)


def test_program_handling_sigterm_sees_it_as_under_python(program, profile_path):
    script = program("sigterm_own_handler.py")
    expected = _terminated([sys.executable, script])
    assert expected[0] == 7
    assert b"False" not in expected[1] and b"handler ran for 15" in expected[1]
    status, out, err = _terminated([sys.executable, "-m", "heatline", "-o", profile_path, script])
    assert (status, out) == expected[:2], err
    assert profile.load(profile_path)["program"] == script


def test_heatline_holds_none_of_the_modules_only_its_command_line_used_to_need(
    run_heatline, tmp_path
):
    """What heatline's main process holds while the program runs, every fork child (a Pool's
    workers) maps again: typing (annotations only) and shutil with bz2 and lzma (argparse's
    terminal width) were about 3 MB of it, never used. The standard modules heatline needs may
    hold them on some versions (3.9's importlib.util imports typing, through runpy): those are
    not heatline's to leave out."""
    listing = ("import gc, json, types\n"
               "print(json.dumps(sorted({o.__name__ for o in gc.get_objects()\n"
               "                         if isinstance(o, types.ModuleType)})))\n")
    script = tmp_path / "modules.py"
    script.write_text(listing)
    result = run_heatline("-q", str(script))
    assert result.returncode == 0, result.stderr
    held = set(json.loads(result.stdout))
    assert "heatline.run.launch" in held  # the modules are seen
    needed = subprocess.run([sys.executable, "-c", "import argparse, json, runpy, sysconfig\n"
                             + listing], capture_output=True, text=True, check=True)
    unneeded = {"typing", "shutil", "bz2", "lzma"} - set(json.loads(needed.stdout))
    assert not held & unneeded, sorted(held & unneeded)


SUPPORTS = """\
import os, sys
sets = ("supports_fd", "supports_dir_fd", "supports_follow_symlinks", "supports_effective_ids")
for name in ("execv", "execve", "posix_spawn", "posix_spawnp"):
    function = getattr(os, name, None)
    print(name, [s for s in sets if function in getattr(os, s)], flush=True)
fd = os.open(sys.executable, os.O_RDONLY)
pid = os.fork()
if pid == 0:
    os.execve(fd, [sys.executable, "-c", "print('the child exec ran')"], os.environ)
os.waitpid(pid, 0)
os.execve(fd, [sys.executable, "-c", "print('the main exec ran')"], dict(os.environ))
"""


def test_exec_functions_keep_their_place_in_os_supports_sets(run_heatline, run_python,
                                                             tmp_path):
    """heatline wraps os.execve (and execv, posix_spawn*) to follow children: the wrapper is
    listed in os.supports_fd wherever the function is (CPython's test_posix skipped
    test_fexecve under heatline, asking `os.execve in os.supports_fd`), and exec by descriptor
    works through it, in a fork child and in the main process."""
    script = tmp_path / "supports.py"
    script.write_text(SUPPORTS)
    expected = run_python(str(script))
    assert expected.returncode == 0, expected.stderr
    assert b"execve ['supports_fd']" in expected.stdout
    result = run_heatline("-q", str(script))
    assert (result.returncode, result.stdout, result.stderr) == (0, expected.stdout, b"")


# The lines of the targets' hot_loop() that take its time.
HOT_LOOP = ("for i in range(600_000):", "total += i % 7")


def test_exec_arguments_the_real_call_refuses_fail_as_under_python(run_heatline, run_python,
                                                                   program, profile_path):
    """heatline's wrappers of _posixsubprocess.fork_exec, os.execv/execve and posix_spawn read
    only lists and tuples of paths: anything else goes to the real call untouched and fails as
    under python (CPython's test_capi passes fork_exec an object claiming sys.maxsize items,
    which python refuses with MemoryError and a wrapper walking it never finished). The run is
    neither ended nor handed over by a refused exec: the hot loop after them is profiled."""
    script = program("exec_bad_arguments.py")
    expected = run_python(script, timeout=120)
    assert expected.returncode == 0, expected.stderr
    assert b"fork_exec huge executable_list: MemoryError" in expected.stdout
    result = run_heatline("-q", "-o", profile_path, script, timeout=120)
    assert (result.returncode, result.stdout, result.stderr) == (0, expected.stdout, b"")
    found = profile.load(profile_path)
    assert found["samples"] > 0
    lines = found["files"][script]["lines"]
    busiest = max(lines, key=lambda line: line["python_s"] + line["native_s"])
    assert busiest["source"].strip() in HOT_LOOP


def test_os_exit_writes_the_profile_and_leaves_nothing_in_the_temp_dir(
    run_heatline, run_python, program, tmp_path
):
    """os._exit skips atexit handlers, heatline's among them, whether the program calls it or
    one of its own atexit handlers (which run before heatline's) does: the exit status and the
    lost buffered output are python's, the profile is written all the same with the program's
    lines, and the run directory and control files are removed from the temp directory."""
    script = program("os_exit_paths.py")
    for how in ("atexit", "direct"):
        temp, runtime = tmp_path / f"tmp-{how}", tmp_path / f"run-{how}"
        temp.mkdir()
        runtime.mkdir(mode=0o700)
        # stdout block-buffered (a pipe, PYTHONUNBUFFERED empty): what os._exit loses
        env = {"TMPDIR": str(temp), "XDG_RUNTIME_DIR": str(runtime), "PYTHONUNBUFFERED": ""}
        expected = run_python(script, how, env=env, timeout=120)
        assert expected.returncode == 3
        assert expected.stdout == (b"before the loop\n" if how == "atexit" else b"")
        out = tmp_path / f"{how}.json"
        result = run_heatline("-q", "-o", str(out), script, how, env=env, timeout=120)
        assert (result.returncode, result.stdout, result.stderr) == (
            3, expected.stdout, expected.stderr), result.stderr
        found = profile.load(str(out))
        lines = found["files"][script]["lines"]
        busiest = max(lines, key=lambda line: line["python_s"] + line["native_s"])
        assert busiest["source"].strip() in HOT_LOOP
        assert os.listdir(temp) == []
        assert [os.listdir(d) for d in runtime.iterdir()] in ([], [[]])


def test_allocators_name_is_pythons_under_memory_profiling(run_heatline, run_python, program,
                                                           profile_path):
    """CPython's test C API names the installed allocators by comparing them with the ones it
    knows (pymalloc, malloc, their debug variants); heatline's memory hooks wrap them, so it
    would find none. Under heatline the program and its children (PYTHONMALLOC=malloc, debug,
    -X dev...; profiled too) get the name they get under python."""
    target = program("allocators_name.py")
    expected = run_python(target, timeout=120)
    assert expected.returncode == 0, expected.stderr.decode()
    if expected.stdout == b"no test C API\n":
        pytest.skip("this Python has neither _testcapi nor _testinternalcapi")
    names = dict(line.split(" ", 1) for line in expected.stdout.decode().splitlines())
    assert names["malloc"] == "malloc" and names["dev_mode"].endswith("_debug"), names
    result = run_heatline("-q", "-o", profile_path, target, timeout=120)
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout == expected.stdout
    run = profile.load(profile_path)
    assert len(run["processes"]) == 1 + 7, run["processes"]  # the children were profiled
