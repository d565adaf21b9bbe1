"""`--pprof-server HOST:PORT` (and heatline.start(pprof_server=...)): the running profile pulled
as Go's net/http/pprof serves it, read by `go tool pprof` over HTTP as a Go service's would be.
The target (tests/targets/pprof_service.py) spins in hot_function on its main thread while a
helper thread sleeps, and holds 64 MiB allocated by hold_memory: the CPU profile of a window
lists hot_function first, the heap profile hold_memory with the bytes it holds. Bad requests get
4xx answers and leave the program running; a port in use is one line and exit 1; the server's
threads are not the program's (threading.enumerate()).
"""

import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from _tools import pprof_top

TARGETS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "targets")
SERVICE = os.path.join(TARGETS, "pprof_service.py")
URL = re.compile(rb"heatline: pprof server on (http://\S+/debug/pprof/)\n")
HELD_BYTES = 64 << 20

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")


def _start(tmp_path, mode="command"):
    """The service running (once it spins) and its server's base URL."""
    ready = tmp_path / "ready"
    if mode == "command":
        command = [sys.executable, "-m", "heatline", "-q", "--pprof-server", "127.0.0.1:0",
                   SERVICE, str(ready)]
    else:
        command = [sys.executable, SERVICE, str(ready), "api"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    line = process.stderr.readline()
    match = URL.match(line)
    assert match, (line, process.poll())
    deadline = time.monotonic() + 120
    while not ready.exists():
        assert process.poll() is None
        assert time.monotonic() < deadline
        time.sleep(0.01)
    return process, match.group(1).decode()


@pytest.fixture(params=["command", "api"])
def service(tmp_path, request):
    process, url = _start(tmp_path, request.param)
    yield process, url
    process.kill()
    process.communicate()


def _rows(text):
    """(flat value, name) of pprof -top's rows, in its order."""
    rows = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 6 and fields[1].endswith("%") and fields[4].endswith("%"):
            rows.append((fields[0], " ".join(fields[5:])))
    return rows


def _bytes(text):
    number = re.fullmatch(r"([\d.]+)([kMG]?B)", text)
    scale = {"B": 1, "kB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30}[number.group(2)]
    return float(number.group(1)) * scale


def _seconds(out, name):
    """pprof -top's flat time of function name, in seconds (0 when it is not listed)."""
    found = re.search(r"^\s*([\d.]+)(ms|s)\s+[\d.]+%.*\s" + re.escape(name) + "$", out, re.M)
    return 0.0 if found is None else float(found.group(1)) / (1000 if found.group(2) == "ms" else 1)


def test_go_tool_pprof_reads_the_cpu_profile_of_a_window(service, tmp_path):
    """The window's CPU time: hot_function, spinning the whole window, is first, and is one
    thread's time at most; the helper's sleep is not CPU time: it is charged at most the time
    it was awake, as its own record of its wake-ups says. (On a loaded machine a thread waiting
    for a CPU counts as running, sampler.c: a helper waiting to take the GIL from the spinning
    thread after each sleep can be 37% of the window at load 10, so the bound is what it
    measured, not a share.) The window lasts 2 s: pprof's Duration says so."""
    process, url = service
    begun = time.monotonic()
    out = pprof_top(url + "profile?seconds=2", tmp_path)
    ended = time.monotonic()
    rows = _rows(out)
    assert rows and rows[0][1] == "hot_function", out
    duration = float(re.search(r"Duration: ([\d.]+)s", out).group(1))
    assert 2.0 <= duration < 60, out
    wakes = [float(t) for t in (tmp_path / "ready.wakes").read_text().split()]
    # Awake between two wake-ups inside [begun, ended] (a wider span than the window: the bound
    # is looser, never tighter, than the window's own).
    awake_s = sum(max(0.0, later - earlier - 0.05) for earlier, later in zip(wakes, wakes[1:])
                  if begun <= earlier and later <= ended + 0.05)
    slack_s = 0.05  # a few 10 ms sampling intervals at the window's two ends
    assert _seconds(out, "helper") <= awake_s + slack_s, (awake_s, out)
    assert _seconds(out, "hot_function") <= duration + slack_s, out  # one thread at most
    assert process.poll() is None


def test_go_tool_pprof_reads_the_heap(service, tmp_path):
    """The memory held now: hold_memory's 64 MiB, sampled every 64 KiB on average (about 1000
    samples, a few % of error: within 20%), is first."""
    process, url = service
    out = pprof_top(url + "heap", tmp_path)
    rows = _rows(out)
    assert rows and rows[0][1] == "hold_memory", out
    assert abs(_bytes(rows[0][0]) - HELD_BYTES) <= 0.2 * HELD_BYTES, out
    assert "Type: inuse_space" in out
    assert process.poll() is None


def _get(url):
    try:
        with urllib.request.urlopen(url, timeout=120) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def test_bad_requests_are_answered_and_the_program_runs_on(tmp_path):
    process, url = _start(tmp_path)
    try:
        host, port = re.match(r"http://([\d.]+):(\d+)/", url).groups()
        assert _get(url + "nothing")[0] == 404
        assert _get(url + "profile?seconds=abc")[0] == 400
        assert _get(url + "profile?seconds=-1")[0] == 400
        assert _get(url + "profile?seconds=100000")[0] == 400
        status, body = _get(url)
        assert status == 200 and b"profile?seconds=N" in body
        request = urllib.request.Request(url + "heap", data=b"x", method="POST")
        assert _get(request)[0] == 405
        for garbage in (b"\x00\xff garbage\r\n\r\n", b"GET\r\n\r\n", b"", b"G" * 20000):
            with socket.create_connection((host, int(port)), timeout=60) as raw:
                raw.sendall(garbage)
                raw.shutdown(socket.SHUT_WR)
                answer = raw.recv(100)
                assert answer.startswith(b"HTTP/1.1 400"), (garbage[:20], answer)
        with socket.create_connection((host, int(port)), timeout=60):
            pass  # a client that connects and goes away
        status, body = _get(url + "profile?seconds=0.5")
        assert status == 200 and body[:2] == b"\x1f\x8b"  # still serving: gzip
        assert process.poll() is None
    finally:
        process.kill()
        process.communicate()


def test_a_request_imports_nothing_from_the_programs_directory(tmp_path):
    """The program's directory holds a gzip.py of its own, which the program never imports:
    serving a profile (gzipped) must not import it either (heatline's gzip was set aside from
    sys.modules for the program's; the server imported what it runs before the program)."""
    (tmp_path / "gzip.py").write_text("print('the program gzip was imported')\n")
    ready, done = tmp_path / "ready", tmp_path / "done"
    script = tmp_path / "service.py"
    script.write_text("import os, sys, time\n"
                      f"open({str(ready)!r}, 'w').close()\n"
                      f"while not os.path.exists({str(done)!r}): time.sleep(0.01)\n"
                      "print(sorted(m for m in sys.modules if m.startswith('gzip')))\n")
    process = subprocess.Popen([sys.executable, "-m", "heatline", "-q", "--pprof-server",
                                "127.0.0.1:0", str(script)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    try:
        url = URL.match(process.stderr.readline()).group(1).decode()
        while not ready.exists():
            assert process.poll() is None
            time.sleep(0.01)
        for path in ("heap", "profile?seconds=0.2"):
            status, body = _get(url + path)
            assert status == 200 and body[:2] == b"\x1f\x8b", (path, status, body[:200])
        done.write_text("")
        out, err = process.communicate(timeout=120)
    finally:
        process.kill()
        process.communicate()
    assert process.returncode == 0, err
    assert out == b"[]\n"


def test_a_port_in_use_is_one_line(tmp_path):
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    port = taken.getsockname()[1]
    script = tmp_path / "ran.py"
    script.write_text("print('ran')\n")
    try:
        done = subprocess.run([sys.executable, "-m", "heatline", "--pprof-server",
                               f"127.0.0.1:{port}", str(script)], capture_output=True,
                              text=True, timeout=120, check=False)
    finally:
        taken.close()
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == (f"heatline: error: --pprof-server 127.0.0.1:{port}: the port is in "
                           "use\n")


@pytest.mark.parametrize("address, message", [
    ("6060", "must be HOST:PORT (e.g. 127.0.0.1:6060, or :0 for a free port on loopback), "
     "not '6060'"),
    (":99999", "the port must be a whole number from 0 to 65535, not ':99999'"),
])
def test_a_bad_address_is_one_line(address, message, tmp_path):
    script = tmp_path / "nothing.py"
    script.write_text("")
    done = subprocess.run([sys.executable, "-m", "heatline", "--pprof-server", address,
                           str(script)], capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 2
    assert done.stderr == f"heatline: error: argument --pprof-server: {message}\n"


def test_the_programs_threads_are_its_own(run_heatline, run_python, tmp_path):
    """The server's threads are not in threading.enumerate() nor counted by active_count(), and
    the program's output is python's."""
    script = tmp_path / "threads.py"
    script.write_text("import threading, time\n"
                      "time.sleep(0.2)\n"
                      "print(threading.active_count(), [t.name for t in threading.enumerate()])\n")
    plain = run_python(str(script), text=True)
    served = run_heatline("-q", "--pprof-server", "127.0.0.1:0", str(script), text=True)
    assert served.returncode == plain.returncode == 0
    assert served.stdout == plain.stdout == "1 ['MainThread']\n"


def test_the_api_refuses_a_port_in_use():
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    port = taken.getsockname()[1]
    code = ("import heatline\n"
            "try:\n"
            f"    heatline.start(pprof_server='127.0.0.1:{port}')\n"
            "except heatline.HeatlineError as exc:\n"
            "    print(exc)\n"
            "print(heatline.is_running())\n")
    try:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              timeout=120, check=False)
    finally:
        taken.close()
    assert done.stdout == f"--pprof-server 127.0.0.1:{port}: the port is in use\nFalse\n", done
