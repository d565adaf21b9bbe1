"""setup.py's refusal of a free-threaded CPython: one line naming the limit, before anything is
compiled (no such interpreter can be installed here, so its build configuration is faked: the
same refusal as a real one's sysconfig gives)."""

import os
import subprocess
import sys

import pytest

# Nothing checked here depends on the CPython version: runs on the main CPython and under ASan,
# not on every version (Makefile, suite-3.X).
pytestmark = pytest.mark.interpreter_independent

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

FAKE_FREE_THREADED = """
import sys, sysconfig
real = sysconfig.get_config_var
sysconfig.get_config_var = lambda name: 1 if name == "Py_GIL_DISABLED" else real(name)
sys.argv = ["setup.py", "build_ext"]
exec(compile(open("setup.py").read(), "setup.py", "exec"), {"__name__": "__main__"})
"""


def test_a_free_threaded_build_is_refused_in_one_line():
    done = subprocess.run([sys.executable, "-c", FAKE_FREE_THREADED], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("heatline: free-threaded CPython (")
    assert done.stderr.endswith("is not supported; use the default build of CPython 3.9 to "
                                "3.15\n")
