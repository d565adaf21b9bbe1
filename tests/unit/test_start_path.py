"""No module of heatline imports typing on a followed child's start path (heatline/__init__.py
says what it would cost): neither in a Python child the program spawns (run/follow.py) nor in
the program exec'd in place of the main process (run/handover.py), before the program runs.
The main process's own run is checked in test_cli.py.

What each process imported is read from python's own record of its imports (-X importtime,
passed to the children as PYTHONPROFILEIMPORTTIME), compared with the same program's children
under python alone: what the interpreter imports at its start on some versions is not
heatline's."""

import os
import subprocess
import sys

# Spawns `python -c pass` with its import record on RECORD/spawned.txt, then execs itself, its
# record on RECORD/exec.txt, where it marks the moment the program runs.
PROGRAM = r"""
import os, subprocess, sys

record = sys.argv[1]
if sys.argv[2:] == ["exec"]:
    print("--- the program runs", file=sys.stderr, flush=True)
    sys.exit(0)
env = dict(os.environ, PYTHONPROFILEIMPORTTIME="1")
spawned = subprocess.run([sys.executable, "-c", "pass"], env=env, stderr=subprocess.PIPE,
                         check=True)
with open(os.path.join(record, "spawned.txt"), "wb") as file:
    file.write(spawned.stderr)
os.environ["PYTHONPROFILEIMPORTTIME"] = "1"
fd = os.open(os.path.join(record, "exec.txt"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
os.dup2(fd, 2)
os.execv(sys.executable, [sys.executable, __file__, record, "exec"])
"""


def _imports(path):
    """The modules a record lists, up to the program's mark where there is one."""
    names = set()
    with open(path, encoding="utf-8") as file:
        for line in file:
            if line.startswith("--- the program runs"):
                break
            if line.startswith("import time:"):
                names.add(line.rpartition("|")[2].strip())
    return names


def _records(tmp_path, *command):
    script = tmp_path / "starts.py"
    script.write_text(PROGRAM)
    record = tmp_path / ("heatline" if command else "python")
    record.mkdir()
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPROFILEIMPORTTIME"}
    subprocess.run([sys.executable, *command, str(script), str(record)], env=env, check=True,
                   cwd=tmp_path, timeout=120)
    return _imports(record / "spawned.txt"), _imports(record / "exec.txt")


def test_a_followed_child_starts_without_typing(tmp_path):
    spawned, execed = _records(tmp_path, "-m", "heatline", "-q")
    plain_spawned, plain_execed = _records(tmp_path)
    # The records hold heatline's start path: the test cannot pass on a child left unfollowed.
    assert {"heatline.run.follow", "heatline.engine.session"} <= spawned, sorted(spawned)
    assert {"heatline.run.handover", "heatline.engine.session"} <= execed, sorted(execed)
    assert "typing" not in spawned - plain_spawned, sorted(spawned - plain_spawned)
    assert "typing" not in execed - plain_execed, sorted(execed - plain_execed)
