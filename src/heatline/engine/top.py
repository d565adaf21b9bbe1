"""``heatline top PID``'s sampling of another process: the remote reader (_native.remote_*,
remote.h) found once and read many times a second without stopping the process, each thread's
reading classified as the engine's own sampler classifies its ticks (sampler.c's header), and
the time between readings charged to the thread's innermost frame.

What can be told from outside, per thread and reading: its Python stack, whether it holds the
GIL, the instruction its innermost frame executes (a call or not: the opcode table of the
target's version, :func:`opcode_table`) and its kernel state (/proc's letter, read right after
its stack). A thread that is not running or runnable (state S, D...) is charged system; a
running one inside a call, native; a running one holding the GIL (or handing it over at a
switch point), Python; a running one without the GIL inside an operator, native. What cannot
be: the sampler's clock test (a thread's CPU clock is readable only inside its own process), so
a runnable thread waiting for a CPU counts as running, as the sampler counts it.

Nothing is loaded into the process and none of its code runs; the readings never stop it
(dump's pause is not used): a stack that moves while it is read is torn, its innermost frames
(read first) kept, and a reading that got no frame of a thread is tried again, then dropped
(counted in ``torn``).
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field

from heatline.engine import dump as dump_reader
from heatline.engine import opcodes

PYTHON, NATIVE, SYSTEM = 0, 1, 2
KINDS = ("python", "native", "system")
READ_ATTEMPTS = 3  # a reading with a thread torn before its first frame is tried again


@dataclass(frozen=True)
class Function:
    file: str
    name: str
    qualname: str
    first_line: int


@dataclass
class ThreadSample:
    native_id: int
    thread_id: int
    main: bool
    holds_gil: bool
    kernel_state: str
    kind: int  # PYTHON, NATIVE or SYSTEM
    frames: list[tuple[int, int]]  # (function id, line), innermost first
    complete: bool
    python_name: str | None = None  # the name threading gave it (None: none)


def classify(kernel_state: str, holds_gil: bool, leaf_flags: int, gil_taken: bool,
             version: tuple[int, int]) -> int:
    """The kind of a thread's reading, by sampler.c's rule (its header comment)."""
    if kernel_state not in ("R", ""):
        return SYSTEM
    if leaf_flags & opcodes.CALL:
        return NATIVE
    if holds_gil or leaf_flags & opcodes.SWITCH:
        return PYTHON
    if leaf_flags & opcodes.SWITCH_CONTENDED and gil_taken and version < (3, 10):
        return PYTHON
    return NATIVE


_TABLE_SCRIPT = (
    "import runpy, sys\n"
    "sys.stdout.write(runpy.run_path(sys.argv[1])['opcode_flags_table']().hex())\n"
)


def opcode_table(pid: int, binary: str, version: tuple[int, int]) -> tuple[bytes | None, str]:
    """The target's opcode flags (engine/opcodes.py's table, for its version) and "", or None
    and why not. heatline's own when the versions match; else the target's executable is run
    (a new process, not the target) on opcodes.py, when it is a python (named python*, the
    interpreter found in it or in its libpython): a program embedding Python is never run."""
    if version == sys.version_info[:2]:
        return opcodes.opcode_flags_table(), ""
    exe = f"/proc/{pid}/exe"
    try:
        real = os.readlink(exe)
    except OSError:
        real = ""
    why = (f"it runs CPython {version[0]}.{version[1]} and heatline {sys.version_info[0]}."
           f"{sys.version_info[1]}, whose opcode numbers differ")
    real = real.removesuffix(" (deleted)")
    if not os.path.basename(real).startswith("python") or not (
            real == binary or os.path.basename(binary).startswith("libpython")):
        return None, why
    try:
        done = subprocess.run([exe, "-I", "-S", "-c", _TABLE_SCRIPT, opcodes.__file__],
                              capture_output=True, text=True, timeout=10, check=False)
        table = bytes.fromhex(done.stdout.strip())
    except (OSError, ValueError, subprocess.SubprocessError):
        return None, why
    return (table, "") if len(table) == 256 else (None, why)


class Reader:
    """One process read again and again. Raises dump.DumpError (its one-line messages) when
    the process cannot be read. Not for two threads at once."""

    def __init__(self, pid: int) -> None:
        from heatline import _native

        self._native = _native
        dump_reader.check_process(pid)
        self.pid = pid
        reader, status = _native.remote_open(pid, None)
        if reader is None:
            raise dump_reader.error_of(pid, status, "heatline top")
        self.version_text = dump_reader.version_text(status["version"], status["version_exact"])
        self.version = (status["version"] >> 24, (status["version"] >> 16) & 0xFF)
        self.binary = status["binary"]
        table, self.native_note = opcode_table(pid, self.binary, self.version)
        if table is not None:  # a reader with the table: the first one had none to give
            reader, status = _native.remote_open(pid, table)
            if reader is None:
                raise dump_reader.error_of(pid, status, "heatline top")
        self._reader = reader
        self.functions: list[Function] = []
        self.torn = 0  # readings of a thread dropped: torn before its first frame, every time

    def function(self, function_id: int) -> Function:
        if function_id >= len(self.functions):
            self.functions.extend(Function(*f) for f in self._native.remote_functions(
                self._reader, len(self.functions)))
        return self.functions[function_id]

    def read(self) -> list[ThreadSample] | None:
        """Every Python thread's reading, classified; None when the process has gone. A thread
        with no frame (between two Python calls, or torn before its first frame) is read again
        up to READ_ATTEMPTS times; a torn one is then dropped."""
        for attempt in range(READ_ATTEMPTS):
            raw = self._native.remote_sample(self._reader)
            if raw["error"] is not None:
                if raw["error"] == "no-process" or not os.path.exists(f"/proc/{self.pid}"):
                    return None
                continue
            threads = raw["threads"]
            torn = [t for t in threads if not t["complete"] and not t["frames"]]
            if not torn or attempt == READ_ATTEMPTS - 1:
                self.torn += len(torn)
                break
        else:
            return []
        gil_taken = any(t["holds_gil"] for t in threads)
        samples = []
        for t in threads:
            if not t["frames"]:
                continue
            samples.append(ThreadSample(
                native_id=t["native_id"], thread_id=t["thread_id"], main=t["main"],
                holds_gil=t["holds_gil"], kernel_state=t["kernel_state"],
                kind=classify(t["kernel_state"], t["holds_gil"], t["leaf_flags"], gil_taken,
                              self.version),
                frames=t["frames"], complete=t["complete"], python_name=t["python_name"]))
        return samples


@dataclass
class FunctionTime:
    """One thread's time in one function over a window: own (innermost frame) per kind,
    total (anywhere on the stack), and own time per line."""
    own_ns: list[int] = field(default_factory=lambda: [0, 0, 0])
    total_ns: int = 0
    lines: dict[int, int] = field(default_factory=dict)


@dataclass
class ThreadTime:
    native_id: int
    main: bool
    name: str = ""  # the kernel's (/proc/PID/task/TID/comm)
    python_name: str | None = None  # the name threading gave it
    ns: list[int] = field(default_factory=lambda: [0, 0, 0])
    gil_ns: int = 0
    functions: dict[int, FunctionTime] = field(default_factory=dict)


@dataclass
class Window:
    """The readings between two refreshes."""
    start: float
    end: float = 0.0
    readings: int = 0
    sampled_ns: int = 0  # the time the readings stand for (each one's interval, summed)
    threads: dict[int, ThreadTime] = field(default_factory=dict)
    read_s: float = 0.0  # heatline's own time reading


class Sampler:
    """Reads a process every sampling_interval_s on average (intervals drawn from [0.5, 1.5)
    x the mean, as the engine's, so readings cannot lock onto a period of the program) on a
    thread of this process, and charges the time between readings to each thread's innermost frame;
    :meth:`take` hands over the window so far and starts a new one."""

    def __init__(self, reader: Reader, sampling_interval_s: float) -> None:
        self.reader = reader
        self.sampling_interval_s = sampling_interval_s
        self.gone = False  # the process has exited
        self.total_own_ns: dict[tuple[int, int], int] = {}  # (thread, function) since start
        self._lock = threading.Lock()
        self._window = Window(start=time.monotonic())
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="heatline-top", daemon=True)
        self._names: dict[int, str] = {}

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def take(self) -> Window:
        with self._lock:
            window, self._window = self._window, Window(start=time.monotonic())
        window.end = self._window.start
        return window

    def _name(self, native_id: int) -> str:
        if native_id not in self._names:
            try:
                with open(f"/proc/{self.reader.pid}/task/{native_id}/comm") as file:
                    self._names[native_id] = file.read().strip()
            except OSError:
                self._names[native_id] = ""
        return self._names[native_id]

    def _run(self) -> None:
        rng = random.Random()
        last = time.monotonic()
        while not self._stop.wait(self.sampling_interval_s * (0.5 + rng.random())):
            before = time.monotonic()
            samples = self.reader.read()
            now = time.monotonic()
            if samples is None:
                self.gone = True
                return
            dt = int((now - last) * 1e9)
            last = now
            with self._lock:
                self._charge(samples, dt)
                self._window.read_s += now - before

    def _charge(self, samples: list[ThreadSample], dt: int) -> None:
        window = self._window
        window.readings += 1
        window.sampled_ns += dt
        for s in samples:
            thread = window.threads.get(s.native_id)
            if thread is None:
                thread = window.threads[s.native_id] = ThreadTime(
                    s.native_id, s.main, self._name(s.native_id))
            if s.python_name:
                thread.python_name = s.python_name
            thread.ns[s.kind] += dt
            if s.holds_gil:
                thread.gil_ns += dt
            function_id, line = s.frames[0]
            own = thread.functions.setdefault(function_id, FunctionTime())
            own.own_ns[s.kind] += dt
            own.lines[line] = own.lines.get(line, 0) + dt
            key = (s.native_id, function_id)
            self.total_own_ns[key] = self.total_own_ns.get(key, 0) + dt
            for seen in {f for f, _ in s.frames}:
                thread.functions.setdefault(seen, FunctionTime()).total_ns += dt
