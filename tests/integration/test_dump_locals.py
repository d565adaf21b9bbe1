"""`heatline dump --locals PID` and the thread names dump and top read from outside, against
tests/targets/dump_locals.py, whose threads are named by threading (or, one, only by the
kernel), blocked at known lines holding local variables whose reprs are known: each name and
value exactly, on this test's CPython and on every other one installed (PYENV_VERSIONS), since
the objects' layouts differ by version; the target's own output and exit status the same as in
a run nothing read; and a process that exits while it is read gives one line, never a
traceback.

The target lets any process of its user read it (prctl PR_SET_PTRACER_ANY), as test_dump.py's
targets do, since `heatline dump` is not its parent.
"""

import json
import os
import subprocess
import sys
import time

import pytest
from _tools import assert_no_thread_held, installed_pythons

TARGETS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "targets")
LOCALS = os.path.join(TARGETS, "dump_locals.py")

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")

# The locals of each worker's frame, as the target sets them (its docstring), in its code's order.
WORKER_ONE = [("label", "'hello'"), ("count", "42"), ("items", "<list of 3>"),
              ("quoted", '"it\'s"'), ("text_bytes", "b'a\\x00b'")]
WORKER_TWO = [("big", str(2**70 + 5)), ("negative", "-12345"), ("ratio", "2.5"),
              ("pair", "<tuple of 2>"), ("table", "<dict of 2>"), ("seen", "<set of 4>"),
              ("nothing", "None"), ("flag", "True"), ("long_text", "'" + "x" * 40 + "'..."),
              ("widget", "<Widget object>"), ("small", "0.1"), ("tiny", "1e-05"),
              ("huge", "1e+16"), ("greek", "'\u03b1\u03b2\u03b3'"), ("smile", "'\U0001f600'"),
              ("reader", "<function object>"), ("captured", "7")]


def pythons():
    return [pytest.param(path, id=version) for version, path in installed_pythons().items()]




def heatline(*args):
    done = subprocess.run([sys.executable, "-m", "heatline", *args], capture_output=True,
                          text=True, timeout=120, check=False, stdin=subprocess.DEVNULL)
    assert "Traceback" not in done.stderr, done.stderr
    return done


def start(python, ready):
    """The target running once every thread waits where it stays: (process, its pid, name ->
    (ident, line) of each thread it started)."""
    process = subprocess.Popen([python, LOCALS, ready, "ptracer"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not os.path.exists(ready):
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the target never got ready"
        time.sleep(0.01)
    with open(ready, encoding="utf-8") as file:
        pid, *rows = file.read().splitlines()
    threads = {name: (int(ident), int(line)) for name, ident, line in map(str.split, rows)}
    return process, int(pid), threads


def finish(process, ready):
    """Lets the target finish; its (stdout, stderr, exit status)."""
    with open(ready + ".go", "w"):
        pass
    out, err = process.communicate(timeout=120)
    return out, err, process.returncode


@pytest.fixture
def target(tmp_path):
    started = []

    def run(python=sys.executable):
        ready = str(tmp_path / f"ready-{len(started)}")
        process, pid, threads = start(python, ready)
        started.append(process)
        return process, pid, threads, ready

    yield run
    for process in started:
        if process.poll() is None:
            process.kill()
            process.communicate()


def by_name(dump):
    return {thread["python_name"] or thread["name"]: thread for thread in dump["threads"]}


def frame_of(thread, function):
    [frame] = [frame for frame in thread["frames"] if frame["function"] == function]
    return frame


@pytest.mark.parametrize("python", pythons())
def test_names_and_locals_read_from_outside(target, tmp_path, python):
    process, pid, threads, ready = target(python)
    done = heatline("dump", "--json", "--locals", str(pid))
    assert done.returncode == 0 and done.stderr == "", done.stderr
    dump = json.loads(done.stdout)
    named = by_name(dump)

    for name, expected in (("worker-one", WORKER_ONE), ("worker-two", WORKER_TWO)):
        thread = named[name]
        ident, line = threads[name]
        assert thread["python_name"] == name and thread["thread_id"] == ident, thread
        frame = frame_of(thread, "hold_text" if name == "worker-one" else "hold_numbers")
        assert (frame["file"], frame["line"]) == (LOCALS, line), frame
        assert [(v["name"], v["value"]) for v in frame["locals"]] == expected, frame["locals"]

    [main] = [thread for thread in dump["threads"] if thread["main"]]
    assert main["python_name"] == "MainThread"
    assert main["frames"][0]["function"] == "main"
    assert {v["name"] for v in main["frames"][0]["locals"]} >= {"one", "two", "ready"}

    # A thread threading does not know: no Python name; the kernel's name shows instead.
    raw = named["raw-worker"]
    assert raw["python_name"] is None and raw["name"] == "raw-worker", raw
    assert raw["thread_id"] == threads["raw-worker"][0]
    assert raw["frames"][0]["line"] == threads["raw-worker"][1]
    assert raw["frames"][0]["locals"] == [{"name": "PR_SET_NAME", "value": "15"}]

    text = heatline("dump", "--locals", str(pid)).stdout
    line = threads["worker-one"][1]
    one = text.index('("worker-one")')
    held = text.index(f"    hold_text ({LOCALS}:{line})\n", one)
    assert text[held:].split("\n")[1:6] == [f"        {n} = {v}" for n, v in WORKER_ONE], text
    assert '("raw-worker"): idle' in text and '("MainThread", main thread)' in text
    assert "    hold_text (" in heatline("dump", str(pid)).stdout
    assert " = " not in heatline("dump", str(pid)).stdout  # locals only when asked for

    assert_no_thread_held(pid)
    out, err, status = finish(process, ready)
    # The same as a run nothing read (its .go file there from the start).
    alone = tmp_path / "alone"
    with open(f"{alone}.go", "w"):
        pass
    unread = subprocess.run([python, LOCALS, str(alone)], capture_output=True, text=True,
                            timeout=120, check=False)
    assert (out, err, status) == (unread.stdout, unread.stderr, unread.returncode) == (
        f"done {2**70 + 5 - 12345 + 2 + 2 + 2 + 4 + 100 + 7 + 1 + 1 + 1 + 3 + 1 + 1 + 57 + 1}"
        "\n", "", 3)


def test_top_names_threads_as_threading_does(target):
    process, pid, _, ready = target()
    done = heatline("top", "--once", "--refresh", "1", str(pid))
    assert done.returncode == 0, done.stderr
    rows = {line.split()[1]: line for line in done.stdout.splitlines()
            if line.split()[:1] and line.split()[0].isdigit() and line.split()[1:2]}
    assert {"worker-one", "worker-two", "raw-worker", "MainThread"} <= set(rows), done.stdout
    assert process.poll() is None


def test_a_process_exiting_while_read(tmp_path):
    """The target exits while it is read over and over (paused, and not): each reading returns
    its stacks or says, in one line, that the process is gone; the last one says so."""
    from heatline.engine import dump as reader

    ready = str(tmp_path / "ready")
    process, pid, _ = start(sys.executable, ready)
    with open(ready + ".go", "w"):
        pass
    read = 0
    deadline = time.monotonic() + 60
    while True:
        try:
            reader.read(pid, pause=read % 2 == 0, locals=True)
            read += 1
        except reader.DumpError as exc:
            assert exc.kind == "no-process" and "\n" not in str(exc), exc
            assert str(pid) in str(exc)
            break
        assert time.monotonic() < deadline, "the target never exited"
    process.communicate(timeout=60)
    assert process.returncode == 3
    done = heatline("dump", "--locals", str(pid))
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == f"heatline: error: no process {pid}\n", done.stderr
