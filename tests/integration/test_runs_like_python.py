"""The program's __main__, its streams, tracebacks, modules and warnings are python's, whether it
is a script, ``-m module``, a directory or a zip archive.

Each test runs the same program under python and under heatline and compares what a user sees:
stdout and stderr byte for byte (heatline's report is turned off with -q), the exit status and
the files the program leaves."""

import json
import os
import subprocess
import sys
import zipapp

import pytest
from _tools import require_module

from heatline import data as profile

TARGETS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "targets")


def _environ(**extra):
    """The test's environment without PYTHONUNBUFFERED (when it is set, nothing is buffered and
    the order of the program's output and its traceback cannot differ) nor colour/width."""
    env = {key: value for key, value in os.environ.items()
           if key not in ("PYTHONUNBUFFERED", "FORCE_COLOR", "NO_COLOR", "COLUMNS", "LINES")}
    env.update(extra)
    return env


def _as_in_a_log(command, cwd, **extra_env):
    """``command > log 2>&1``: stdout and stderr into one file, as a shell does; the file's
    bytes and the exit status."""
    log = os.path.join(cwd, "log.txt")
    with open(log, "wb") as out:
        status = subprocess.run(command, cwd=cwd, stdout=out, stderr=subprocess.STDOUT,
                                env=_environ(**extra_env), timeout=120, check=False).returncode
    with open(log, "rb") as f:
        data = f.read()
    os.unlink(log)
    return status, data


HEATLINE = [sys.executable, "-m", "heatline", "-q"]
# The `heatline` command (a script pip made): Python's script runner flushes sys.stderr and
# sys.stdout when a script ends, which matters to the order of the streams (docs/design-running.md).
COMMAND = os.path.join(os.path.dirname(sys.executable), "heatline")


def _program_in_every_form(tmp_path, source):
    """The same source as a script, a module for -m, a directory and a zip archive: the
    argv (after the interpreter) for each, run from tmp_path."""
    (tmp_path / "script.py").write_text(source)
    (tmp_path / "as_module.py").write_text(source)
    directory = tmp_path / "directory"
    directory.mkdir()
    (directory / "__main__.py").write_text(source)
    archive_source = tmp_path / "archive_source"
    archive_source.mkdir()
    (archive_source / "__main__.py").write_text(source)
    zipapp.create_archive(str(archive_source), str(tmp_path / "app.pyz"))
    return {"script": ["script.py"], "-m": ["-m", "as_module"], "directory": ["directory"],
            "zipapp": ["app.pyz"]}


# Each writes to stdout (block-buffered: a file) and a partial line to stderr (line-buffered)
# before it ends: the order of the three in the log is what python's runner decides.
ENDINGS = {
    "raises": "raise ValueError('the program failed')\n",
    "exits with a message": "sys.exit('the exit message')\n",
    "returns; atexit writes to stderr": (
        "import atexit\natexit.register(sys.stderr.write, 'atexit wrote this\\n')\n"
    ),
    "broken excepthook": (
        "def hook(*args):\n    raise KeyError('the hook is broken')\n"
        "sys.excepthook = hook\nraise ValueError('the program failed')\n"
    ),
    "nested call raises": (
        "def inner():\n    raise RuntimeError('deep')\n"
        "def outer():\n    inner()\nouter()\n"
    ),
}


@pytest.mark.parametrize("ending", ENDINGS)
def test_output_and_traceback_are_pythons_byte_for_byte(tmp_path, ending):
    """Items 6 and 7: a script's buffered output comes before its traceback or exit message
    (python's runner flushes the streams when the script's code ends); a -m module, directory
    or zip archive, run by runpy, gets no such flush, and its traceback shows runpy's frames
    (`<frozen runpy>` on 3.11+, runpy.py before): the same bytes in the log as under python."""
    source = ("import sys\nprint('the program wrote this')\nsys.stderr.write('partial line')\n"
              + ENDINGS[ending])
    forms = _program_in_every_form(tmp_path, source)
    for form, args in forms.items():
        expected = _as_in_a_log([sys.executable, *args], str(tmp_path))
        assert expected[0] != 0 or ending.startswith("returns")
        got = _as_in_a_log([*HEATLINE, *args], str(tmp_path))
        assert got == expected, (form, expected[1].decode(), got[1].decode())
        if form != "script" and ending.startswith(("raises", "nested")):
            assert b"runpy" in got[1]  # python's frames, kept
        if os.path.exists(COMMAND) and ending in ("raises", "broken excepthook",
                                                  "nested call raises"):
            # Started as the `heatline` command the traceback is the same (the streams' order
            # differs only for what python -m writes at shutdown: docs/design-running.md).
            got = _as_in_a_log([COMMAND, "-q", *args], str(tmp_path))
            assert got == expected, (form, "command", expected[1].decode(), got[1].decode())


NESTED_FAILURE = """\
def inner():
    raise RuntimeError('deep in the program')

def outer():
    inner()

print('before the failure')
outer()
"""


def test_traceback_goes_through_runpys_frames_like_python(run_heatline, run_python, tmp_path):
    """Item 7: python runs a -m module, a directory and a zip archive through runpy, and their
    tracebacks show runpy's two frames (`<frozen runpy>` on 3.11+, runpy.py with its source
    lines before): the same under heatline, whether started as `python -m heatline` or as the
    `heatline` command, and a script's traceback has none."""
    forms = _program_in_every_form(tmp_path, NESTED_FAILURE)
    for form, args in forms.items():
        expected = run_python(*args, cwd=str(tmp_path))
        assert expected.returncode == 1
        assert (b"runpy" in expected.stderr) == (form != "script")
        commands = [[sys.executable, "-m", "heatline"]]
        if os.path.exists(COMMAND):
            commands.append([COMMAND])
        for command in commands:
            result = subprocess.run([*command, "-q", *args], cwd=str(tmp_path), env=_environ(),
                                    capture_output=True, timeout=120, check=False)
            assert (result.returncode, result.stdout, result.stderr) == (
                1, expected.stdout, expected.stderr), (form, command, result.stderr.decode())


def test_failure_while_finding_the_module_is_reported_like_python(run_heatline, run_python,
                                                                 tmp_path):
    """Item 7: python -m imports the module's parent packages in runpy's lookup: what they
    raise, and a syntax error in the module, are printed through runpy's frames."""
    package = tmp_path / "failing_package"
    package.mkdir()
    (package / "__init__.py").write_text(
        "print('package starts')\nraise ValueError('the package failed')\n"
    )
    (package / "tool.py").write_text("print('never')\n")
    (tmp_path / "broken_syntax.py").write_text("x = (1,\n 2 3)\n")
    (tmp_path / "broken_directory").mkdir()
    (tmp_path / "broken_directory" / "__main__.py").write_text("x = (1,\n 2 3)\n")
    for args in (["-m", "failing_package.tool"], ["-m", "broken_syntax"], ["broken_directory"]):
        expected = run_python(*args, cwd=str(tmp_path))
        assert expected.returncode == 1 and b"runpy" in expected.stderr
        result = run_heatline("-q", *args, cwd=str(tmp_path))
        assert (result.returncode, result.stdout, result.stderr) == (
            expected.returncode, expected.stdout, expected.stderr), result.stderr.decode()


def test_main_module_has_pythons_attributes_in_pythons_order(run_heatline, run_python,
                                                            tmp_path):
    """Item 8: python's __main__ has __annotations__ (an empty dict) before 3.14, whether the
    module has annotations or not, and none from 3.14 (annotations are evaluated lazily, PEP
    649); its attributes come in the interpreter's order."""
    source = ("print(globals().get('__annotations__', 'none'))\nprint(list(globals()))\n"
              "print(__loader__ is not None, __spec__ is None, __package__, __doc__)\n")
    forms = _program_in_every_form(tmp_path, source)
    (tmp_path / "annotated.py").write_text(
        "import sys\nx: int = 1\nprint(sys.modules[__name__].__annotations__)\n")
    forms["annotated"] = ["annotated.py"]
    for form, args in forms.items():
        expected = run_python(*args, cwd=str(tmp_path))
        assert expected.returncode == 0, expected.stderr
        result = run_heatline("-q", *args, cwd=str(tmp_path))
        assert result.returncode == 0, (form, result.stderr.decode())
        assert result.stdout == expected.stdout, form
        assert result.stderr == b""


FINALIZERS = """\
import atexit
import os
import sys

path = sys.argv[1]
open(path, "w").close()

class Cleanup:
    def __init__(self, name):
        self.name = name

    def __del__(self):
        print("finalizing", self.name, "with its globals:", os is not None, flush=True)
        if self.name == "first":
            os.remove(path)

first = Cleanup("first")
second = Cleanup("second")
in_a_list = [Cleanup("third, in a list")]
atexit.register(print, "atexit ran", flush=True)
print("the program is done", flush=True)
"""


@pytest.mark.parametrize("form", ["script", "-m"])
def test_finalizers_at_shutdown_see_what_they_see_under_python(run_heatline, run_python,
                                                              tmp_path, form):
    """Item 5: heatline holds no reference to the program's __main__, so at shutdown python
    frees it, and the objects only it holds, with their globals intact and in python's order
    (a __del__ removing a file works), instead of clearing a module still alive."""
    (tmp_path / "finalizers.py").write_text(FINALIZERS)
    args = ["finalizers.py"] if form == "script" else ["-m", "finalizers"]
    victim = tmp_path / "victim.txt"
    expected = run_python(*args, str(victim), cwd=str(tmp_path))
    assert expected.returncode == 0 and expected.stderr == b"", expected.stderr
    assert b"finalizing first with its globals: True" in expected.stdout
    assert not victim.exists()
    result = run_heatline("-q", *args, str(victim), cwd=str(tmp_path))
    assert (result.returncode, result.stdout, result.stderr) == (0, expected.stdout, b""), (
        result.stderr.decode())
    assert not victim.exists()


def test_pytest_under_heatline_sees_no_warning_of_heatlines(run_heatline, run_python, tmp_path):
    """Item 10: pytest marks the modules of its plugins' distributions (heatline's, through the
    pytest11 entry point) for assertion rewriting and warns about those already imported,
    which heatline always is when it runs pytest; with `filterwarnings = error` that aborted
    the run. heatline's package says it is not to be rewritten (PYTEST_DONT_REWRITE)."""
    (tmp_path / "pytest.ini").write_text("[pytest]\nfilterwarnings =\n    error\n")
    (tmp_path / "test_simple.py").write_text("def test_sum():\n    assert 1 + 1 == 2\n")
    args = ["-m", "pytest", "-q", "-p", "no:cacheprovider"]
    expected = run_python(*args, cwd=str(tmp_path))
    assert expected.returncode == 0, expected.stdout.decode()
    result = run_heatline("-q", *args, cwd=str(tmp_path))
    assert result.returncode == 0, result.stdout.decode() + result.stderr.decode()
    assert b"1 passed" in result.stdout and b"warning" not in result.stdout.lower()
    # Without -W error the warning was counted ("1 passed, 2 warnings").
    (tmp_path / "pytest.ini").unlink()
    result = run_heatline("-q", *args, "-W", "default", cwd=str(tmp_path))
    assert result.returncode == 0 and b"warning" not in result.stdout.lower(), result.stdout


NUMPY_PACKAGE = {
    "__init__.py": (
        "import time\n"
        "import numpy\n"
        "print('the package is imported', flush=True)\n"
        "start = time.process_time()\n"
        "while time.process_time() - start < 0.3:  # work the profile must show\n"
        "    pass\n"
    ),
    "sub/__init__.py": "",
    "sub/tool.py": (
        "import sys\n"
        "import numpy\n"
        "from .. import numpy as the_packages_numpy\n"
        "import with_numpy\n"
        "print(numpy.add(1, 2), the_packages_numpy is numpy, sys.argv[1:])\n"
        "print(sys.modules['with_numpy'] is with_numpy, __name__, __spec__.name)\n"
    ),
}


def test_dash_m_submodule_of_a_package_that_imports_numpy(run_heatline, run_python, tmp_path):
    """Item 12: runpy's lookup imports the module's parent packages, and with them their C
    extensions (numpy's cannot be imported twice in a process). They are the program's: the
    package is imported once, its modules stay, and its import is profiled."""
    require_module("numpy", "test")
    for name, text in NUMPY_PACKAGE.items():
        path = tmp_path / "with_numpy" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    args = ["-m", "with_numpy.sub.tool", "an", "-x"]
    expected = run_python(*args, cwd=str(tmp_path))
    assert expected.returncode == 0, expected.stderr
    assert expected.stdout.count(b"the package is imported") == 1
    out = tmp_path / "profile.json"
    result = run_heatline("-q", "-o", str(out), *args, cwd=str(tmp_path))
    assert (result.returncode, result.stdout, result.stderr) == (0, expected.stdout, b""), (
        result.stderr.decode())
    data = profile.load(str(out))
    tool = str(tmp_path / "with_numpy" / "sub" / "tool.py")
    assert data["program"] == "-m with_numpy.sub.tool"
    assert data["argv"] == [tool, "an", "-x"]  # sys.argv as the module started
    # The package's import, part of the run under python, is part of the profile.
    assert data["files"][str(tmp_path / "with_numpy" / "__init__.py")]["lines"]

    # numpy's own modules run with -m, as under python.
    expected = run_python("-m", "numpy.f2py", "-v", cwd=str(tmp_path))
    assert expected.returncode == 0, expected.stderr
    result = run_heatline("-q", "-m", "numpy.f2py", "-v", cwd=str(tmp_path))
    assert (result.returncode, result.stdout, result.stderr) == (0, expected.stdout, b""), (
        result.stderr.decode())


def test_dash_m_torch_utils_collect_env(run_heatline, run_python, tmp_path):
    """Item 12: `from torch._C import *` in a second copy of torch crashed (SIGSEGV)."""
    require_module("torch", "torch")
    expected = run_python("-m", "torch.utils.collect_env", cwd=str(tmp_path), timeout=300)
    assert expected.returncode == 0, expected.stderr
    result = run_heatline("-q", "-m", "torch.utils.collect_env", cwd=str(tmp_path), timeout=300)
    assert result.returncode == 0, result.stderr.decode()[-3000:]
    assert result.stderr == expected.stderr  # runpy's own RuntimeWarning for this module
    # The same report, but for a CPU's current clock where lscpu gives one.
    def steady(out):
        return [line for line in out.splitlines() if b"MHz" not in line]

    assert steady(result.stdout) == steady(expected.stdout)
    assert b"PyTorch version: " in result.stdout


def test_torchrun_two_ranks_on_the_cpu_are_profiled_as_children(run_heatline, run_python,
                                                                tmp_path):
    """Item 12: `python -m torch.distributed.run --nproc_per_node 2 train.py`, how distributed
    training is launched, runs under heatline as under python (gloo, on the CPU), and its two
    ranks are profiled as the launcher's children."""
    require_module("torch", "torch")
    train = os.path.join(TARGETS, "children_torchrun.py")
    args = ["-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", train]
    env = {"TMPDIR": str(tmp_path), "OMP_NUM_THREADS": "1"}
    expected = run_python(*args, cwd=str(tmp_path), timeout=300, env=env)
    assert expected.returncode == 0, expected.stderr.decode()[-3000:]
    out = tmp_path / "profile.json"
    result = run_heatline("-q", "-o", str(out), *args, cwd=str(tmp_path), timeout=300, env=env)
    assert result.returncode == 0, result.stderr.decode()[-3000:]
    assert sorted(result.stdout.splitlines()) == sorted(expected.stdout.splitlines())
    ranks = sorted(json.loads(line)["rank"] for line in result.stdout.splitlines())
    assert ranks == [0, 1]
    data = profile.load(str(out))
    children = [p for p in data["processes"][1:] if p["argv"][:1] == [train]]
    assert len(children) == 2, data["processes"]
    assert not [w for w in data["warnings"] if "left no profile" in w], data["warnings"]


FAULTHANDLER_DUMP = """\
import faulthandler, sys

def inner():
    faulthandler.dump_traceback(file=sys.stdout, all_threads=False)
    sys.stdout.flush()
    if sys.argv[1:] == ['crash']:
        faulthandler.enable()
        faulthandler._sigsegv()

def outer():
    inner()

outer()
"""


def _stack_lines(text):
    """The `File ...` lines of faulthandler's tracebacks in text (the thread's id, which differs
    from run to run, and the list of extension modules after a crash left out)."""
    return [line for line in text.decode().splitlines() if line.startswith("  File ")]


@pytest.mark.parametrize("crash", [
    False,
    # AddressSanitizer handles SIGSEGV itself (and aborts), before faulthandler can.
    pytest.param(True, marks=pytest.mark.skipif(bool(os.environ.get("HEATLINE_SANITIZED")),
                                                reason="the sanitizer owns the crash signal")),
], ids=["dump_traceback", "crash"])
def test_faulthandler_shows_no_heatline_frame_below_the_program(tmp_path, crash):
    """Python runs the program with no frame below it (runpy's two for -m, a directory or a zip
    archive): faulthandler's traceback, called or dumped at a crash, ends at the program's
    `<module>` or runpy's frames. heatline runs the program from C with its own frames set
    aside, so that faulthandler shows the same frames, whichever way heatline is started."""
    forms = _program_in_every_form(tmp_path, FAULTHANDLER_DUMP)
    extra = ["crash"] if crash else []
    for form, args in forms.items():
        expected = _as_in_a_log([sys.executable, *args, *extra], str(tmp_path))
        stack = _stack_lines(expected[1])
        assert len(stack) == (3 if form == "script" else 5) * (2 if crash else 1), stack
        commands = [HEATLINE] + ([[COMMAND, "-q"]] if os.path.exists(COMMAND) else [])
        for command in commands:
            got = _as_in_a_log([*command, *args, *extra], str(tmp_path))
            assert (got[0], _stack_lines(got[1])) == (expected[0], stack), (
                form, command, got[1].decode())


def test_program_sees_no_frame_below_its_own_and_the_whole_recursion_limit(run_heatline,
                                                                           run_python, program):
    """sys._getframe() at module level has no f_back, and recursion reaches as deep, as under
    python: heatline's frames and the recursion count they use are set aside while the program
    runs."""
    expected = run_python(program("frame_depth.py"))
    assert expected.stdout.decode().splitlines()[0] == "frames below 0"
    for command in ([], [COMMAND] if os.path.exists(COMMAND) else []):
        if command:
            result = subprocess.run([*command, "-q", program("frame_depth.py")],
                                    capture_output=True, timeout=120, check=False)
        else:
            result = run_heatline("-q", program("frame_depth.py"))
        assert (result.returncode, result.stdout) == (0, expected.stdout), result.stderr
