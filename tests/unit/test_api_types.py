"""heatline.profile is a plain, typed function (no callable module): type checkers see that
@heatline.profile keeps the decorated function's signature, @heatline.profile(...) too, and that
`with heatline.profile() as p` gives a Profile."""

import os
import subprocess
import sys

import pytest

import heatline

# Nothing checked here depends on the CPython version: runs on the main CPython and under ASan,
# not on every version (Makefile, suite-3.X).
pytestmark = pytest.mark.interpreter_independent

SRC = os.path.dirname(os.path.dirname(os.path.abspath(heatline.__file__)))

PROGRAM = """\
import heatline

@heatline.profile
def f(x: int) -> str:
    return str(x)

@heatline.profile(quiet=True, cpu_only=True)
def g(x: int) -> int:
    return x

reveal_type(f)
reveal_type(g)
with heatline.profile(cpu_only=True) as p:
    pass
reveal_type(p)
"""


def _mypy_env():
    """An installed heatline is found by mypy where it is installed (py.typed); a source tree
    (an editable install, whose import hook mypy does not follow) through MYPYPATH."""
    env = dict(os.environ)
    if os.path.basename(SRC) != "site-packages":
        env["MYPYPATH"] = SRC
    return env


def test_heatline_profile_is_a_function_of_the_api():
    from heatline import api

    assert heatline.profile is api.profile
    assert type(heatline.profile).__name__ == "function"


def test_type_checkers_see_the_decorator_and_context_manager_types(tmp_path):
    pytest.importorskip("mypy", reason="mypy is not installed (pip install '.[test]')")
    program = tmp_path / "typed.py"
    program.write_text(PROGRAM)
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental", "--cache-dir", str(tmp_path / "c"),
         str(program)],
        capture_output=True, text=True, cwd=tmp_path, env=_mypy_env(),
        timeout=300,
    )
    # (older mypy releases spell builtins.int; the versions pip picks differ by CPython)
    revealed = [line.split("Revealed type is ", 1)[1].replace("builtins.", "")
                for line in result.stdout.splitlines() if "Revealed type is" in line]
    assert revealed == ['"def (x: int) -> str"', '"def (x: int) -> int"',
                        '"heatline.api.Profile"'], result.stdout
