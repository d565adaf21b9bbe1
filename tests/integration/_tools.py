"""External consumers the export tests run (go tool pprof, headless Chromium), and optional
Python modules some targets use (torch).

.ci/run installs the tools (Debian packages golang-go and chromium) and sets
HEATLINE_REQUIRE_TOOLS=1, so in CI a missing tool fails the test instead of skipping it. An
optional module fails its tests when it is named in HEATLINE_REQUIRE_MODULES (comma-separated),
which `make unit` and `make sanitize` set to the optional extras asked for in EXTRAS (.ci/run
asks for torch); elsewhere (plain `make test`, the other CPythons' virtualenvs, which never
install it) those tests skip and say why. The native-frames tests need the kernel to allow
heatline's perf event; where it refuses it they skip, or fail with HEATLINE_REQUIRE_PERF=1
(.ci/run sets it, so a CI machine that refuses does not pass without testing them).
"""

import ctypes
import errno
import glob
import importlib.util
import os
import platform
import shutil
import struct
import subprocess
import sys

import pytest


def require(*names):
    for name in names:
        path = shutil.which(name)
        if path:
            return path
    message = (f"{names[0]} is not installed (apt-get install -y "
               f"{'golang-go' if names[0] == 'go' else names[0]}; .ci/run does this)")
    if os.environ.get("HEATLINE_REQUIRE_TOOLS"):
        pytest.fail(message)
    pytest.skip(message)


def require_module(name, extra):
    """Skip (or, when HEATLINE_REQUIRE_MODULES names it or its extra, fail) a test that needs
    the optional module ``name``, installed by the pyproject extra ``extra``."""
    try:
        found = importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:  # a submodule's parent package is missing ("opentelemetry")
        found = False
    if found:
        return
    message = (f"{name} is not installed (pip install -e '.[test,{extra}]', or "
               f"make test EXTRAS=test,{extra} as .ci/run does)")
    required = os.environ.get("HEATLINE_REQUIRE_MODULES", "").replace(",", " ").split()
    if name in required or extra in required:
        pytest.fail(message)
    pytest.skip(message)


_PERF_EVENT_OPEN = {"x86_64": 298, "aarch64": 241}.get(platform.machine())


def perf_event_refused():
    """Why the kernel refuses the event native frames come from (native.c: a user-space
    CPU-clock sampling event on the calling thread), or None where it allows it. The event is
    opened and closed again, so a refusal that the sysctl does not show (a seccomp profile, a
    missing capability) is seen too."""
    try:
        with open("/proc/sys/kernel/perf_event_paranoid") as f:
            paranoid = int(f.read())
    except (OSError, ValueError) as e:
        return f"kernel.perf_event_paranoid unreadable ({e})"
    if paranoid > 2:
        return f"kernel.perf_event_paranoid is {paranoid} (2 or lower allows the event)"
    if _PERF_EVENT_OPEN is None:
        return None  # no call number known here: the sysctl is all there is to go on
    attr = bytearray(128)  # struct perf_event_attr; unset fields zero
    # type PERF_TYPE_SOFTWARE, size, config PERF_COUNT_SW_CPU_CLOCK, sample_period 1 ms,
    # sample_type PERF_SAMPLE_IP; flags exclude_kernel | exclude_hv
    struct.pack_into("IIQQQ", attr, 0, 1, len(attr), 0, 1_000_000, 1)
    struct.pack_into("Q", attr, 40, (1 << 5) | (1 << 6))
    buffer = (ctypes.c_char * len(attr)).from_buffer(attr)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    fd = libc.syscall(ctypes.c_long(_PERF_EVENT_OPEN), buffer, 0, -1, -1, 8)  # FD_CLOEXEC
    if fd < 0:
        code = ctypes.get_errno()
        return f"perf_event_open refused ({errno.errorcode.get(code, code)}: {os.strerror(code)})"
    os.close(fd)
    return None


def require_perf_event():
    """Skip (or, with HEATLINE_REQUIRE_PERF=1, fail) a test that needs the event."""
    reason = perf_event_refused()
    if reason is None:
        return
    message = (f"{reason}: native frames need it (sysctl kernel.perf_event_paranoid=2, in a "
               "container --cap-add PERFMON or a seccomp profile that allows perf_event_open)")
    if os.environ.get("HEATLINE_REQUIRE_PERF"):
        pytest.fail(message)
    pytest.skip(message)


def tool_env():
    """The environment for an outside tool (chromium, go): without the ASan runtime that
    `make sanitize` preloads into every process, which such tools are not built for."""
    env = dict(os.environ)
    for name in ("LD_PRELOAD", "ASAN_OPTIONS", "UBSAN_OPTIONS"):
        env.pop(name, None)
    return env


def pprof_top(source, saved, *flags):
    """``go tool pprof -top`` of source (a file, or a URL pprof fetches), pprof keeping its copy
    of a fetched profile in saved. The fetch gets a hang guard's deadline: pprof's own is 1.5
    times the URL's ``seconds`` plus 5 s, a latency claim that a loaded machine breaks (a 1 s
    window's answer took over 6.5 s in a fresh clone's CI), which no test here makes."""
    go = require("go")
    done = subprocess.run([go, "tool", "pprof", "-top", "-timeout=300", *flags, str(source)],
                          capture_output=True, text=True, timeout=600, check=False,
                          env={**tool_env(), "PPROF_TMPDIR": str(saved)})
    assert done.returncode == 0, done.stderr
    return done.stdout


def chromium_dom(uri, *args):
    """The DOM headless Chromium renders from ``uri``, with the network pointed nowhere (any
    request would fail: no proxy exists there, and no name resolves)."""
    chromium = require("chromium", "chromium-browser")
    command = [
        chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
        "--disable-extensions", "--disable-background-networking",
        "--proxy-server=127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND",
        "--virtual-time-budget=5000", *args, "--dump-dom", uri,
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False,
                            env=tool_env())
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


def assert_no_thread_held(pid):
    """No thread of process pid is left traced (TracerPid) or stopped (state t or T) by a
    reader from outside it (heatline dump, top)."""
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/status", encoding="utf-8") as file:
                status = dict(line.split(":", 1) for line in file if ":" in line)
        except (FileNotFoundError, ProcessLookupError):
            # A thread that ended since the listing: gone before the open (ENOENT), or between
            # the open and the read (ESRCH, seen once under ASan with a churning target).
            continue
        assert status["TracerPid"].strip() == "0", tid
        assert status["State"].split()[0] not in ("t", "T"), (tid, status["State"])


PYENV = os.environ.get("PYENV_VERSIONS", os.path.expanduser("~/.pyenv/versions"))


def installed_pythons():
    """{"3.X": path}: this test's CPython, then every other 3.9-3.13 installed under
    PYENV_VERSIONS (as `make versions` finds them), for the readers of another process, which
    read each version's own layouts."""
    found = {f"{sys.version_info[0]}.{sys.version_info[1]}": sys.executable}
    for minor in range(9, 14):
        version = f"3.{minor}"
        candidates = sorted(glob.glob(os.path.join(PYENV, f"{version}.*", "bin",
                                                   f"python{version}")))
        if version not in found and candidates:
            found[version] = candidates[-1]
    return dict(sorted(found.items()))


def source_line(path, text):
    """The line number of the one line of path that contains text."""
    with open(path, encoding="utf-8") as file:
        hits = [number for number, line in enumerate(file, 1) if text in line]
    assert len(hits) == 1, (text, hits)
    return hits[0]
