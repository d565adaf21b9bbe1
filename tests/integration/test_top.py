"""`heatline top PID`, run as a user runs it: against tests/targets/top_kinds.py, whose threads'
kinds are known (one asleep in time.sleep: system; one spinning in Python: Python; one hashing in
C without the GIL: native), the text view names each one's function and line and splits its time
right; on a terminal (a pty) the live view shows the hot function and `q` quits, leaving the
target running and untouched; the target is never stopped; bad input is one line, as dump's.

The targets are children of the test, but `heatline top` is not their parent: under Yama's
ptrace_scope 1 it could not read them, so each target first allows any process of its user to
(prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY)), as test_dump.py's do.
"""

import os
import pty
import re
import select
import shutil
import signal
import subprocess
import sys
import time

import pytest
from _tools import assert_no_thread_held, installed_pythons, source_line

TARGETS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "targets")
KINDS = os.path.join(TARGETS, "top_kinds.py")

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")

ROW = re.compile(r"^\s*(\d+)\s+([\d.]+)%\s+([\d.]+)%\s+([\d.]+)%\s+([\d.]+)%\s+([\d.]+)%\s+"
                 r"([\d.]+)\s+(\S+) \((.*):(\d+)\)$")
READINGS = re.compile(r"^(\d+) readings in ([\d.]+) s", re.M)


def _pythons():
    return [pytest.param(path, id=version) for version, path in installed_pythons().items()]




@pytest.fixture
def kinds(tmp_path):
    """The top_kinds target running, once every thread is where it stays; killed after."""
    ready = str(tmp_path / "ready")
    process = subprocess.Popen([sys.executable, KINDS, ready, "ptracer"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not os.path.exists(ready):
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.01)
    yield process
    process.kill()
    process.communicate()


def _top(*args, timeout=120):
    done = subprocess.run([sys.executable, "-m", "heatline", "top", *args], capture_output=True,
                          text=True, timeout=timeout, check=False, stdin=subprocess.DEVNULL)
    assert "Traceback" not in done.stderr, done.stderr
    return done


def _rows(text):
    """function name -> (own%, python%, native%, system%, file, line) of the view's rows."""
    rows = {}
    for line in text.splitlines():
        match = ROW.match(line)
        if match:
            own, python, native, system = (float(match.group(i)) for i in (2, 3, 4, 5))
            rows[match.group(8)] = (own, python, native, system, match.group(9),
                                    int(match.group(10)))
    return rows


def test_each_threads_kind_and_line(kinds):
    """Each thread's function, at its known line, with its known kind taking most of its time.
    A reading is a point sample of each thread's state; what is not the thread's kind comes from
    the moments it changes hands: the hasher waiting for the GIL to return from each hash
    (system), the spinner handing it over. The bound: each thread's own kind holds at least 75%
    of its time, over a view of at least 50 readings (3 s at 100 a second: one misread reading
    moves it 2% at most)."""
    done = _top("--once", "--refresh", "3", str(kinds.pid))
    assert done.returncode == 0, done.stderr
    readings = int(READINGS.search(done.stdout).group(1))
    assert readings >= 50, done.stdout
    rows = _rows(done.stdout)
    expected = {
        "spin_in_python": (1, source_line(KINDS, "while n >= 0")),
        "hash_in_c": (2, source_line(KINDS, "hashlib.sha256(data)")),
        "sleep_in_system": (3, source_line(KINDS, "time.sleep(600)")),
    }
    for function, (kind, line) in expected.items():
        assert function in rows, done.stdout
        own, *split, file, at = rows[function]
        assert (file, at) == (KINDS, line), done.stdout
        assert own > 95, done.stdout  # the thread's whole time is in that one function
        assert split[kind - 1] >= 0.75 * own, (function, done.stdout)
    assert_no_thread_held(kinds.pid)
    assert kinds.poll() is None




@pytest.mark.parametrize("python", _pythons())
def test_a_c_call_holding_the_gil_is_native(tmp_path, python):
    """A thread inside a C call that keeps the GIL (sum of a long list) is native: only the
    instruction its frame executes (a call) tells it from bytecode, read with the opcode table
    of the target's version (heatline's own, or computed by the target's interpreter when the
    versions differ). Its loop's other instructions take well under 1% of its time."""
    ready = tmp_path / "ready"
    code = ("import ctypes, sys, time\n"
            "ctypes.CDLL(None).prctl(0x59616D61, ctypes.c_ulong(-1).value, 0, 0, 0)\n"
            "data = list(range(5_000_000))\n"
            f"open({str(ready)!r}, 'w').close()\n"
            "def add_up():\n"
            "    while True: sum(data)\n"
            "add_up()\n")
    process = subprocess.Popen([python, "-c", code])
    try:
        while not ready.exists():
            assert process.poll() is None
            time.sleep(0.01)
        done = _top("--once", "--refresh", "3", str(process.pid))
    finally:
        process.kill()
        process.wait()
    assert done.returncode == 0, done.stderr
    assert "Native time not told" not in done.stdout
    assert int(READINGS.search(done.stdout).group(1)) >= 50, done.stdout
    own, python_pct, native, system, _, line = _rows(done.stdout)["add_up"]
    assert line == 6 and own > 95, done.stdout
    assert native >= 0.75 * own, done.stdout


def test_text_views_follow_one_another_until_the_target_exits(tmp_path):
    """Not on a terminal: one view per interval, as text, and when the target exits, a line
    saying so and status 0. The target runs until two views were read (a fixed run time was
    not enough: on a loaded machine heatline top's start took most of it)."""
    ready, stop = tmp_path / "ready", tmp_path / "stop"
    code = ("import ctypes, os, sys\n"
            "ctypes.CDLL(None).prctl(0x59616D61, ctypes.c_ulong(-1).value, 0, 0, 0)\n"
            f"open({str(ready)!r}, 'w').close()\n"
            "def busy(stop):\n"
            "    while not os.path.exists(stop):\n"
            "        for _ in range(20000): pass\n"
            f"busy({str(stop)!r})\n")
    process = subprocess.Popen([sys.executable, "-c", code])
    top = None
    try:
        while not ready.exists():
            assert process.poll() is None
            time.sleep(0.01)
        top = subprocess.Popen([sys.executable, "-m", "heatline", "top", "--refresh", "0.5",
                                str(process.pid)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
        seen = ""
        while seen.count(f"Process {process.pid}: ") < 2:
            line = top.stdout.readline()
            assert line, (seen, top.stderr.read())
            seen += line
        stop.touch()
        process.wait(timeout=120)
        rest, stderr = top.communicate(timeout=120)
    finally:
        process.kill()
        process.wait()
        if top is not None and top.poll() is None:
            top.kill()
            top.wait()
    assert "Traceback" not in stderr, stderr
    assert top.returncode == 0, stderr
    assert stderr == f"heatline top: process {process.pid} exited\n"
    assert "busy" in _rows(seen + rest)


def _read_until(fd, wanted, timeout=60):
    """What the pty gave until wanted appeared in it (or the time ran out)."""
    seen = b""
    deadline = time.monotonic() + timeout
    while wanted not in seen and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # EIO: the other side closed
                break
            if not chunk:
                break
            seen += chunk
    return seen


def _live_view_quits_on(kinds, key, what):
    """heatline top on a pty, watching kinds: it shows the hot function, then the key typed
    quits it with status 0 (no traceback) and the target runs on, untouched."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: heatline top on the pty
        os.environ["COLUMNS"], os.environ["LINES"] = "160", "40"
        # A run started in the background inherits SIGINT ignored, and python would leave it
        # so: a user's terminal has the default (the make sanitize run here failed on it).
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.execv(sys.executable, [sys.executable, "-m", "heatline", "top", "--refresh", "0.5",
                                  str(kinds.pid)])
    try:
        seen = _read_until(fd, b"spin_in_python")
        assert b"spin_in_python" in seen, seen[-3000:]
        os.write(fd, key)
        deadline = time.monotonic() + 60
        while True:
            seen += _read_until(fd, b"\x00", timeout=0.2)  # keep the pty drained
            finished, status = os.waitpid(pid, os.WNOHANG)
            if finished:
                break
            assert time.monotonic() < deadline, f"{what} did not quit heatline top"
    finally:
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
        os.close(fd)
    assert b"Traceback" not in seen
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    assert kinds.poll() is None
    assert_no_thread_held(kinds.pid)


def test_live_view_in_a_terminal_shows_the_hot_function_and_quits_on_q(kinds):
    _live_view_quits_on(kinds, b"q", "q")


def test_ctrl_c_quits_the_live_view(kinds):
    # The terminal's interrupt character: SIGINT to heatline top.
    _live_view_quits_on(kinds, b"\x03", "Ctrl-C")


def test_a_moving_process_read_fast_never_crashes_either_side(tmp_path):
    """tests/targets/dump_churn.py's stacks grow and shrink and its threads start and end all
    the time: read 1000 times a second for 3 s, each reading returns (torn stacks kept to the
    frames read first, or dropped), every frame named is real code (never one read from
    garbage), and the target lives on."""
    churn = os.path.join(TARGETS, "dump_churn.py")
    ready = str(tmp_path / "ready")
    process = subprocess.Popen([sys.executable, churn, ready, "ptracer"])
    try:
        while not os.path.exists(ready):
            assert process.poll() is None
            time.sleep(0.01)
        done = _top("--once", "--refresh", "3", "--sampling-interval", "0.001", "--rows", "1000",
                    str(process.pid))
        assert process.poll() is None
    finally:
        process.kill()
        process.wait()
    assert done.returncode == 0, done.stderr
    rows = _rows(done.stdout)
    assert rows, done.stdout
    assert any(file == churn for *_, file, _line in rows.values()), done.stdout
    for function, (*_, file, line) in rows.items():
        # the target's code, or the threading machinery's (threading.py, its WeakSet's
        # callbacks): real files, holding the function at a line they have
        with open(file, encoding="utf-8") as source:
            text = source.read()
        name = function.rpartition(".")[2]
        assert name.startswith("<") or f"def {name}" in text, (function, file)  # <listcomp>
        assert 0 < line <= text.count("\n") + 1, (function, file, line)


def test_no_such_process():
    child = subprocess.Popen(["true"])
    child.wait()
    done = _top(str(child.pid))
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == f"heatline: error: no process {child.pid}\n"


def test_not_a_python_process():
    sleeper = subprocess.Popen(["sleep", "100"])
    try:
        time.sleep(0.2)
        done = _top(str(sleeper.pid))
    finally:
        sleeper.kill()
        sleeper.wait()
    assert done.returncode == 1
    assert done.stderr.startswith(f"heatline: error: process {sleeper.pid} is not a Python "
                                  "process: no CPython interpreter")
    assert done.stderr.count("\n") == 1


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"),
                    reason="needs root and setpriv: heatline without CAP_SYS_PTRACE against "
                    "another user's process")
def test_refused_another_users_process():
    """The kernel's refusal is dump's one line, naming why and what to do."""
    target = subprocess.Popen(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                               "sleep", "100"])
    try:
        time.sleep(0.3)
        done = subprocess.run(["setpriv", "--bounding-set=-sys_ptrace", "--inh-caps=-sys_ptrace",
                               "--", sys.executable, "-m", "heatline", "top", "--once",
                               str(target.pid)], capture_output=True, text=True, timeout=120,
                              check=False)
    finally:
        target.kill()
        target.wait()
    assert done.returncode == 1 and "Traceback" not in done.stderr, done
    assert done.stderr.startswith(f"heatline: error: not allowed to read process {target.pid} (")
    assert "it runs as user 65534 and heatline as user 0; run heatline top as user 65534" in \
        done.stderr
    assert "--cap-add SYS_PTRACE" in done.stderr and done.stderr.count("\n") == 1


@pytest.mark.parametrize("args, message", [
    (["abc"], "PID must be a process id (a whole number), not 'abc'"),
    (["--sampling-interval", "0", "1"], "argument --sampling-interval: must be a number of "
     "seconds from 0.001 to 1, not '0'"),
    (["--rate", "100", "1"], "--rate is now --sampling-interval (seconds between readings: 0.01 "
     "is 100 a second)"),
])
def test_bad_arguments(args, message):
    done = _top(*args)
    assert done.returncode == 2
    assert done.stderr == f"heatline: error: {message}\n"


# Colours and styles (SGR), left out of a line; any other control sequence (the cursor moved
# up, a line erased: rich's Live redrawing its view) and a carriage return start a new line.
STYLE = re.compile(rb"\x1b\[[0-9;]*m")
MOVE = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][A-Z0-9]|\x1b[=>]|\r")


def _live_view_at(kinds, columns):
    """The live view's lines on a pty `columns` wide, once it shows the busy functions' rows
    (control sequences taken out); top quit with q."""
    pid, fd = pty.fork()
    if pid == 0:
        os.environ["COLUMNS"], os.environ["LINES"] = str(columns), "40"
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.execv(sys.executable, [sys.executable, "-m", "heatline", "top", "--refresh", "0.5",
                                  str(kinds.pid)])
    try:
        seen = _read_until(fd, b"hash_in_c")
        seen += _read_until(fd, b"sleep_in_system")
        seen += _read_until(fd, b"\x00", timeout=1.0)  # the rest of that view
        os.write(fd, b"q")
        deadline = time.monotonic() + 60
        while not os.waitpid(pid, os.WNOHANG)[0]:
            seen += _read_until(fd, b"\x00", timeout=0.2)
            assert time.monotonic() < deadline, "q did not quit heatline top"
    finally:
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
        os.close(fd)
    text = MOVE.sub(b"\n", STYLE.sub(b"", seen)).decode("utf-8", errors="replace")
    return text.split("\n")


@pytest.mark.parametrize("columns", [80, 132])
def test_live_view_keeps_own_and_total_within_the_width(kinds, columns):
    """At 80 columns as wider, the function table keeps its own and total columns (narrowing the
    function's text first, as py-spy top does), and no line is wider than the terminal."""
    lines = _live_view_at(kinds, columns)
    assert "Traceback" not in "\n".join(lines)
    too_wide = [line for line in lines if len(line.rstrip()) > columns]
    assert not too_wide, too_wide
    headers = [line.split() for line in lines if line.split()[:2] == ["thread", "own"]]
    assert headers, lines[-40:]
    assert "total" in headers[-1]
    total_at = headers[-1].index("total")
    rows = [line.split() for line in lines if "spin_in_python" in line]
    assert rows, lines[-40:]
    own, total = rows[-1][1], rows[-1][total_at]
    assert own.endswith("%") and total.endswith("%"), rows[-1]
    assert float(total[:-1]) >= float(own[:-1]) > 50, rows[-1]
    if columns >= 132:  # room for everything: the split and the seconds so far
        assert headers[-1][:7] == ["thread", "own", "python", "native", "system", "total", "own"]
