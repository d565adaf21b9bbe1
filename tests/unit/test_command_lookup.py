"""How `heatline NAME` tells a Python script on PATH from any other command, without running
it (run/program.py): its shebang, read as the kernel and env read it."""

import os
import sys

import pytest

from heatline.run import program

pytestmark = pytest.mark.interpreter_independent


@pytest.mark.parametrize("text, interpreter", [
    ("#!/venv/bin/python\nimport x\n", "/venv/bin/python"),
    ("#!/usr/bin/python3.11 -u\n", "/usr/bin/python3.11"),
    ("#! /usr/bin/env python3\n", "python3"),
    ("#!/usr/bin/env -S python3 -X dev\n", "python3"),
    ("#!/usr/bin/env PYTHONHASHSEED=0 python\n", "python"),
    # pip's launcher for an interpreter path too long for a shebang
    ("#!/bin/sh\n'''exec' /a/very/long/venv/bin/python \"$0\" \"$@\"\n' '''\nimport x\n",
     "/a/very/long/venv/bin/python"),
    ("#!/bin/sh\necho python\n", None),
    ("#!/usr/bin/env bash\n", None),
    ("#!/usr/bin/perl\n", None),
    ("\x7fELF\x02\x01\x01\x00", None),
    ("echo no shebang\n", None),
], ids=repr)
def test_a_python_script_is_told_by_its_shebang(tmp_path, text, interpreter):
    path = tmp_path / "tool"
    path.write_text(text)
    assert program.python_interpreter(str(path)) == interpreter


def test_a_py_file_without_a_shebang_is_python(tmp_path):
    path = tmp_path / "tool.py"
    path.write_text("print(1)\n")
    assert program.python_interpreter(str(path)) == "python"


def test_which_finds_the_first_executable_on_path(tmp_path, monkeypatch):
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    (first / "tool").write_text("not executable")
    (second / "tool").write_text("#!/bin/sh\n")
    (second / "tool").chmod(0o755)
    monkeypatch.setenv("PATH", f"{first}{os.pathsep}{second}")
    assert program.which("tool") == str(second / "tool")
    assert program.which("absent") is None


def test_this_interpreter_is_not_another(tmp_path):
    assert program.other_interpreter(sys.executable) is None
    other = tmp_path / "python3"
    other.write_text("")
    assert program.other_interpreter(str(other)) == str(other)
