"""`heatline dump PID`, run as a user runs it, against targets whose stacks are known
(tests/targets/dump_*.py): every thread's exact function and line chain, which thread holds the
GIL and which wait in a system call; a deadlocked target (a thread holding the GIL inside a C
call that never returns); the JSON shape; reads that never crash on a target that moves; and
every bad input. The targets run on this test's CPython and on every other one installed
(PYENV_VERSIONS, as `make versions` finds them), so one run checks the reader on each version's
layout.

The targets are children of the test, but `heatline dump` is not their parent: under Yama's
ptrace_scope 1 it could not read them, so each target first allows any process of its user to
(prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY)), as a user would for a program they mean to
inspect (docs/live-tools.md, "Permissions").
"""

import glob
import json
import os
import shutil
import subprocess
import sys
import time

import pytest
from _tools import PYENV, assert_no_thread_held, installed_pythons, source_line

TARGETS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "targets")
STACKS = os.path.join(TARGETS, "dump_stacks.py")
DEADLOCK = os.path.join(TARGETS, "dump_deadlock.py")
CHURN = os.path.join(TARGETS, "dump_churn.py")
SLEEP_CALLS = {"clock_nanosleep", "nanosleep", "select", "pselect6"}  # time.sleep's, by version

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")


def _pythons():
    return [pytest.param(version, path, id=version)
            for version, path in installed_pythons().items()]






def _wait_for(path, process, timeout=60):
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.01)
    with open(path, encoding="utf-8") as file:
        return file.read().split()


@pytest.fixture
def start(tmp_path):
    """start(target, python=sys.executable): the target running, once it wrote its ready file
    (its words returned too); killed after the test."""
    started = []

    def run(target, python=sys.executable):
        ready = str(tmp_path / f"ready-{len(started)}")
        process = subprocess.Popen([python, target, ready, "ptracer"],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        started.append(process)
        return process, _wait_for(ready, process)

    yield run
    for process in started:
        process.kill()
        process.communicate()


def _dump(pid, *options, env=None, prefix=()):
    done = subprocess.run([*prefix, sys.executable, "-m", "heatline", "dump", *options, str(pid)],
                          capture_output=True, text=True, timeout=120, check=False, env=env)
    assert "Traceback" not in done.stderr, done.stderr
    return done


def _dump_json(pid, *options):
    done = _dump(pid, "--json", *options)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _chain(thread, depth):
    return [(frame["function"], frame["line"]) for frame in thread["frames"][:depth]]


def _by_innermost(dump):
    return {thread["frames"][0]["function"]: thread for thread in dump["threads"]
            if thread["python"] and thread["frames"]}


def _settled(pid, wanted, options=(), timeout=60):
    """The first dump in which each thread named by its innermost function in `wanted` is
    there: the threads reach their known places a moment after the ready file."""
    deadline = time.monotonic() + timeout
    while True:
        dump = _dump_json(pid, *options)
        if set(wanted) <= set(_by_innermost(dump)) or time.monotonic() > deadline:
            return dump
        time.sleep(0.05)


@pytest.mark.parametrize("version, python", _pythons())
def test_every_thread_shows_its_exact_stack(start, version, python):
    process, (pid, main_ident, waiter_ident) = start(STACKS, python)
    dump = _settled(pid, ["sleep_deeply", "spin", "blocked"])
    line = lambda text: source_line(STACKS, text)  # noqa: E731
    threads = _by_innermost(dump)
    assert len([t for t in dump["threads"] if t["python"]]) == 3, dump

    main = threads["sleep_deeply"]
    assert _chain(main, 3) == [("sleep_deeply", line("time.sleep(600)")),
                               ("main", line("    sleep_deeply()")), ("<module>", line("main()\n"))]
    assert len(main["frames"]) == 3
    assert main["main"] and main["native_id"] == int(pid) and main["thread_id"] == int(main_ident)
    assert main["state"] == "idle" and main["syscall"] in SLEEP_CALLS, main

    spinner = threads["spin"]
    assert _chain(spinner, 2) == [("spin", line("while n >= 0: n += 1")),
                                  ("worker", line("    spin()"))]
    assert [f["file"] for f in spinner["frames"][2:]] == [spinner["frames"][2]["file"]] * 3
    assert spinner["frames"][2]["file"].endswith("threading.py")
    assert spinner["holds_gil"] and spinner["state"] == "running", spinner

    waiter = threads["blocked"]
    assert _chain(waiter, 2) == [("blocked", line("with lock:")),
                                 ("wait_on_lock", line("    blocked(lock)"))]
    assert waiter["thread_id"] == int(waiter_ident)
    assert waiter["state"] == "idle" and waiter["syscall"] == "futex", waiter

    assert [t["holds_gil"] for t in dump["threads"]].count(True) == 1
    assert dump["paused"] and dump["pause_note"] is None
    assert all(t["stopped"] and t["stack_complete"] for t in dump["threads"]), dump
    reported = dump["python"]["version"]  # 3.9 and 3.10: major.minor only
    assert reported == version or reported.startswith(version + "."), reported
    assert_no_thread_held(int(pid))
    assert process.poll() is None


def test_the_text_names_each_thread_and_its_frames(start):
    process, (pid, _, _) = start(STACKS)
    _settled(pid, ["sleep_deeply", "spin", "blocked"])
    done = _dump(pid)
    assert done.returncode == 0 and done.stderr == ""
    text = done.stdout
    assert text.startswith(f"Process {pid}: ")
    assert "Threads stopped for " in text and "stacks innermost first" in text
    assert f'\nThread {pid} ("MainThread", main thread): idle in ' in text
    assert f"    sleep_deeply ({STACKS}:{source_line(STACKS, 'time.sleep(600)')})\n" in text
    assert ": holds the GIL, running\n    spin (" in text
    assert ": idle in futex\n    blocked (" in text


def test_without_pausing_the_waiting_threads_read_the_same(start):
    process, (pid, _, _) = start(STACKS)
    paused = _settled(pid, ["sleep_deeply", "spin", "blocked"])
    running = _settled(pid, ["sleep_deeply", "blocked"], options=["--no-pause"])
    assert not running["paused"] and not any(t["stopped"] for t in running["threads"])
    for name in ("sleep_deeply", "blocked"):
        assert _by_innermost(running)[name]["frames"] == _by_innermost(paused)[name]["frames"]
    assert "Read without stopping the threads" in _dump(pid, "--no-pause").stdout


@pytest.mark.parametrize("version, python", _pythons())
def test_a_deadlocked_process_shows_every_thread(start, version, python):
    """A thread holds the GIL inside pause() (ctypes.PyDLL keeps the GIL); the main thread waits
    for the GIL for ever. Nothing can be run in the process: its stacks are read from outside."""
    process, (pid,) = start(DEADLOCK, python)
    line = lambda text: source_line(DEADLOCK, text)  # noqa: E731
    deadline = time.monotonic() + 60
    while True:  # the thread calls pause() a moment after writing its ready file
        dump = _dump_json(pid)
        stuck = _by_innermost(dump).get("hold_the_gil_for_ever")
        if stuck and stuck["syscall"] == "pause" and stuck["holds_gil"]:
            break
        assert time.monotonic() < deadline, dump
        time.sleep(0.05)
    assert _chain(stuck, 2) == [("hold_the_gil_for_ever", line("libc_keeping_the_gil.pause()")),
                                ("stuck_in_c", line("    hold_the_gil_for_ever()"))]
    assert stuck["state"] == "idle" and stuck["stack_complete"]
    [main] = [t for t in dump["threads"] if t["main"]]
    loop = range(line("while True:"), line("time.sleep(0.01)") + 1)
    assert main["frames"][0]["function"] == "wait_for_ever" and main["frames"][0]["line"] in loop
    assert _chain(main, 3)[1:] == [("main", line("    wait_for_ever()")),
                                   ("<module>", line("main()\n"))]
    assert not main["holds_gil"] and main["stack_complete"]
    assert len([t for t in dump["threads"] if t["python"]]) == 2
    assert_no_thread_held(int(pid))
    assert process.poll() is None  # still deadlocked, not killed


def test_the_json_shape(start):
    process, (pid, _, _) = start(STACKS)
    dump = _settled(pid, ["sleep_deeply", "spin", "blocked"])
    assert set(dump) == {"format", "format_version", "pid", "command", "python", "paused",
                         "pause_ms", "pause_note", "read_ms", "threads_complete", "deadlock",
                         "threads"}
    assert dump["deadlock"] is None  # a thread waits for a lock the sleeping main thread holds
    assert dump["format"] == "heatline-dump" and dump["format_version"] == 1
    assert dump["pid"] == int(pid) and dump["command"][1:2] == [STACKS]
    assert dump["command"][-1] == "ptracer"
    assert set(dump["python"]) == {"version", "binary"}
    assert os.path.isabs(dump["python"]["binary"])
    assert isinstance(dump["pause_ms"], float) and dump["pause_ms"] > 0
    assert isinstance(dump["read_ms"], float) and dump["read_ms"] > 0
    assert dump["threads_complete"] is True
    for thread in dump["threads"]:
        assert set(thread) == {"native_id", "name", "python", "thread_id", "interpreter", "main",
                               "holds_gil", "state", "kernel_state", "syscall", "wchan", "stopped",
                               "stack_complete", "stack_truncated", "python_name", "frames"}
        assert isinstance(thread["native_id"], int) and thread["interpreter"] == 0
        assert thread["state"] in ("running", "idle")
        for frame in thread["frames"]:
            assert set(frame) == {"function", "name", "file", "line"}
            assert isinstance(frame["line"], int) and frame["line"] > 0


def test_reads_of_a_moving_process_never_crash_either_side(start):
    """Without pausing, stacks change under the reader and thread states are freed while read;
    each dump returns (a torn stack marked as such) and the target lives on. Paused dumps of the
    same target are whole and let it go."""
    from heatline.engine import dump as reader

    process, (pid,) = start(CHURN)
    pid = int(pid)
    whole = 0
    for _ in range(200):
        result = reader.read(pid, pause=False)
        whole += sum(t.complete for t in result.threads if t.python)
        for thread in result.threads:
            assert len(thread.frames) <= 70  # never a chain followed into garbage
            # threading's own helpers run too as threads start and end (Thread.start adds the
            # thread to a WeakSet: _weakrefset.py); any other file would be a misread frame.
            assert all(f.file == CHURN or f.file.endswith(("threading.py", "_weakrefset.py"))
                       for f in thread.frames), [f.file for f in thread.frames]
    assert whole > 0
    for _ in range(20):
        result = reader.read(pid, pause=True)
        assert result.paused
        for thread in result.threads:
            if thread.python and thread.stopped:
                assert thread.complete
                assert sum(f.name == "descend" for f in thread.frames) <= 60
        assert_no_thread_held(pid)
    assert process.poll() is None


def test_no_such_process():
    child = subprocess.Popen(["true"])
    child.wait()  # its pid is free now (and very unlikely to be reused this soon)
    done = _dump(child.pid)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == f"heatline: error: no process {child.pid}\n"


def test_a_process_that_exited_but_was_not_waited_for():
    child = subprocess.Popen(["true"])
    deadline = time.monotonic() + 60
    while not open(f"/proc/{child.pid}/stat").read().rpartition(")")[2].split()[0] == "Z":
        assert time.monotonic() < deadline
        time.sleep(0.01)
    done = _dump(child.pid)
    child.wait()
    assert done.returncode == 1
    assert done.stderr == (f"heatline: error: process {child.pid} has exited (a zombie its parent "
                           "has not waited for)\n")


def test_not_a_python_process():
    sleeper = subprocess.Popen(["sleep", "100"])
    try:
        time.sleep(0.2)  # exec'd
        done = _dump(sleeper.pid)
    finally:
        sleeper.kill()
        sleeper.wait()
    assert done.returncode == 1
    assert done.stderr.startswith(f"heatline: error: process {sleeper.pid} is not a Python "
                                  "process: no CPython interpreter")
    assert done.stderr.count("\n") == 1 and "sleep" in done.stderr


@pytest.mark.parametrize("pid", ["abc", "12x"])
def test_a_pid_that_is_not_a_number(pid):
    done = _dump(pid)
    assert done.returncode == 2
    assert done.stderr == ("heatline: error: PID must be a process id (a whole number), "
                           f"not {pid!r}\n")


def test_a_python_heatline_cannot_read():
    old = sorted(glob.glob(os.path.join(PYENV, "3.8.*", "bin", "python3.8")))
    if not old:
        pytest.skip(f"no CPython 3.8 under {PYENV}")
    process = subprocess.Popen([old[-1], "-c", "import time; time.sleep(100)"])
    try:
        time.sleep(0.5)
        done = _dump(process.pid)
    finally:
        process.kill()
        process.wait()
    assert done.returncode == 1 and done.stderr.count("\n") == 1
    assert done.stderr.startswith(f"heatline: error: process {process.pid} runs a CPython older "
                                  "than 3.9 (")
    assert done.stderr.endswith("); heatline dump reads 3.9 to 3.15\n")


# A target that says it is a CPython heatline has no layout for: it rewrites its own version
# words, in Py_Version (read-only data: made writable first) or in the _Py_DebugOffsets at the
# start of _PyRuntime, then waits to be read.
NEWER = """
import ctypes, mmap, sys, time
libc = ctypes.CDLL(None, use_errno=True)
libc.prctl(0x59616D61, ctypes.c_ulong(-1).value, 0, 0, 0)  # PR_SET_PTRACER_ANY
libc.mprotect.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
if sys.argv[1] == "Py_Version":
    word = ctypes.c_ulong.in_dll(ctypes.pythonapi, "Py_Version")
    page = ctypes.addressof(word) & ~(mmap.PAGESIZE - 1)
    assert libc.mprotect(page, 2 * mmap.PAGESIZE, 3) == 0  # PROT_READ | PROT_WRITE
else:  # the debug offsets' version, the word after their cookie
    word = ctypes.c_uint64.from_address(
        ctypes.addressof(ctypes.c_char.in_dll(ctypes.pythonapi, "_PyRuntime")) + 8)
word.value = int(sys.argv[2], 16)
print("ready", flush=True)
time.sleep(100)
"""


@pytest.mark.parametrize("where", ["Py_Version", "_Py_DebugOffsets"])
def test_a_version_heatline_has_no_layout_for_is_refused_in_one_line(where):
    """A minor version past the newest heatline knows (as a CPython released after this
    heatline would be) gets one line naming it, whichever word says so; it is never read with
    another version's layout."""
    if sys.version_info < ((3, 11) if where == "Py_Version" else (3, 13)):
        pytest.skip(f"{where} is exported from "
                    f"{'3.11' if where == 'Py_Version' else '3.13'}")
    newest = 15  # compat.h's HL_REMOTE_MINOR_LAST
    newer = 0x03000000 | (newest + 1) << 16 | 0xF0
    target = subprocess.Popen([sys.executable, "-c", NEWER, where, "%x" % newer],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert target.stdout.readline() == "ready\n"
        done = _dump(target.pid)
    finally:
        target.kill()
        target.wait()
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
    if where == "Py_Version":
        assert done.stderr.startswith(f"heatline: error: process {target.pid} runs CPython "
                                      f"3.{newest + 1} (")
        assert done.stderr.endswith(f"); heatline dump reads 3.9 to 3.{newest}\n")
    else:
        assert done.stderr.startswith(f"heatline: error: process {target.pid} runs CPython "
                                      f"3.{sys.version_info[1]} as _Py_DebugOffsets naming "
                                      "another version than its Py_Version (")


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"),
                    reason="needs root and setpriv: heatline without CAP_SYS_PTRACE against "
                    "another user's process")
def test_refused_another_users_process():
    target = subprocess.Popen(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                               "sleep", "100"])
    try:
        time.sleep(0.3)
        # Gone from the bounding set, the capability is gone from what root runs next.
        done = _dump(target.pid, prefix=["setpriv", "--bounding-set=-sys_ptrace",
                                         "--inh-caps=-sys_ptrace", "--"])
    finally:
        target.kill()
        target.wait()
    assert done.returncode == 1, done
    assert done.stderr.startswith(f"heatline: error: not allowed to read process {target.pid} (")
    assert "it runs as user 65534 and heatline as user 0" in done.stderr
    assert "--cap-add SYS_PTRACE" in done.stderr and done.stderr.count("\n") == 1


def test_a_process_that_exits_while_read_can_be_reaped():
    """Threads of a process that exits while they are stopped are reaped by their tracer (a
    traced thread stays a zombie until then, and with it its process): the parent, here the
    reader too, gets the exit status as usual and does not wait for ever."""
    from heatline.engine import dump as reader

    code = ("import threading, time\n"
            "def spin():\n    while True: pass\n"
            "for _ in range(3): threading.Thread(target=spin, daemon=True).start()\n"
            "time.sleep(1.0)\n")
    for _ in range(3):
        process = subprocess.Popen([sys.executable, "-c", code])
        reads = 0
        deadline = time.monotonic() + 60
        while process.poll() is None:
            assert time.monotonic() < deadline, "the process cannot be reaped"
            try:
                reader.read(process.pid, pause=True)
                reads += 1
            except reader.DumpError:
                pass  # not started yet (no interpreter), or gone
        assert process.wait(timeout=60) == 0
        assert reads > 0
