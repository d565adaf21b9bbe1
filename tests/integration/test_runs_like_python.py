"""The program's __main__, its streams, tracebacks, modules and warnings are python's, whether it
is a script, ``-m module``, a directory or a zip archive (issue 19).

Each test runs the same program under python and under heatline and compares what a user sees:
stdout and stderr byte for byte (heatline's report is turned off with -q), the exit status and
the files the program leaves."""

import os
import zipapp

import pytest


TARGETS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "targets")


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


def test_main_module_has_pythons_attributes_in_pythons_order(run_heatline, run_python,
                                                            tmp_path):
    """Item 8: python's __main__ always has __annotations__ (an empty dict, 3.9-3.13), whether
    the module has annotations or not, and its attributes come in the interpreter's order."""
    source = ("print(__annotations__)\nprint(list(globals()))\n"
              "print(__loader__ is not None, __spec__ is None, __package__, __doc__)\n")
    forms = _program_in_every_form(tmp_path, source)
    (tmp_path / "annotated.py").write_text("x: int = 1\nprint(__annotations__)\n")
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
