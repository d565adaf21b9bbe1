"""Console-script launchers (the scripts pip, uv and installer write for an entry point:
venv/bin/pytest) are library code: recognised by what they do, not by their names
(engine/scope.py, is_launcher), and matched by the engine as whole files (scope.h)."""

import os
import sys

import pytest

from heatline.engine import scope

PIP = """#!/venv/bin/python3
import sys
from _pytest.config import _console_main
if __name__ == '__main__':
    sys.argv[0] = sys.argv[0].removesuffix('.exe')
    sys.exit(_console_main())
"""
OLD_PIP = """#!/venv/bin/python
# -*- coding: utf-8 -*-
import re
import sys
from heatline.cli import main
if __name__ == '__main__':
    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])
    sys.exit(main())
"""
UV = """#!/venv/bin/python
# -*- coding: utf-8 -*-
import sys
from black import patched_main as main
if __name__ == "__main__":
    if sys.argv[0].endswith("-script.pyw"):
        sys.argv[0] = sys.argv[0][:-11]
    elif sys.argv[0].endswith(".exe"):
        sys.argv[0] = sys.argv[0][:-4]
    sys.exit(main())
"""
# The user's own scripts: they compute something, or call what they did not import.
USER_MAIN = """#!/usr/bin/env python3
import sys
from tool import main
def helper():
    return 1
if __name__ == '__main__':
    sys.exit(main())
"""
USER_WORK = """#!/usr/bin/env python3
import sys
from tool import main
if __name__ == '__main__':
    print(sum(range(10)))
    sys.exit(main())
"""
NOT_IMPORTED = """#!/usr/bin/env python3
import sys
if __name__ == '__main__':
    sys.exit(main())
"""
NO_SHEBANG = PIP.split("\n", 1)[1]


@pytest.mark.parametrize("text", [PIP, OLD_PIP, UV])
def test_generated_launchers_are_recognised(tmp_path, text):
    path = tmp_path / "tool"
    path.write_text(text)
    assert scope.is_launcher(str(path))


@pytest.mark.parametrize("text", [USER_MAIN, USER_WORK, NOT_IMPORTED, NO_SHEBANG, "",
                                  PIP + "#" * scope.LAUNCHER_MAX_BYTES])
def test_user_scripts_are_not_launchers(tmp_path, text):
    path = tmp_path / "tool"
    path.write_text(text)
    assert not scope.is_launcher(str(path))


def test_launchers_are_whole_files_with_symlinks_resolved(tmp_path):
    (tmp_path / "real").write_text(PIP)
    os.symlink(tmp_path / "real", tmp_path / "tool")
    (tmp_path / "user").write_text(USER_MAIN)
    found = scope.launcher_files_among([str(tmp_path / "tool"), str(tmp_path / "user"), ""])
    assert found == [str(tmp_path / "tool"), str(tmp_path / "real")]


def test_this_interpreter_launchers_are_excluded_by_default():
    """The scripts directory of the running interpreter (a venv's bin) is read: its heatline
    and pytest launchers, which the installs of this suite wrote, are library code."""
    bin_dir = os.path.dirname(sys.executable)
    launchers = [os.path.join(bin_dir, name) for name in ("heatline", "pytest")]
    launchers = [path for path in launchers if scope.is_launcher(path)]
    if not launchers:
        pytest.skip("no console-script launcher beside this interpreter")
    excluded = scope.default_exclude_prefixes()
    for path in launchers:
        assert os.path.normcase(os.path.abspath(path)) in excluded
    assert not any(entry.startswith(os.path.join(bin_dir, "python")) for entry in excluded)
