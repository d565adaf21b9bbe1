"""Ground truth for the target programs: each phase times itself.

A phase is a function decorated with @phase(kind). While it runs, the thread running it
measures its own wall time (time.perf_counter) and CPU time (time.thread_time). Its true
profile then follows from what the phase does by construction:

  kind "python": executing bytecode while on a CPU.
  kind "native": inside C code (numpy, BLAS, hashlib) while on a CPU.
  kind "system": inside a blocking call (sleep, I/O, lock, join): blocked, except for the
    moments it is busy inside that call: entering it (on a CPU: native), and after the
    wake-up, runnable until a CPU is free (on a busy machine milliseconds per wake-up: a wait
    for a CPU, cpu_wait).

For every phase the busy time is measured, never assumed (a 0.5 s sleep on a loaded 2-core
machine was seen runnable for 3% of it). Busy time is of two parts, as heatline splits it: the
time the thread was on a CPU, which is of the phase's kind (native for a "system" phase), and the
time it was runnable but waiting for a CPU (cpu_wait: the second field of the thread's
/proc/self/task/TID/schedstat, the kernel's run-queue wait). The rest of its wall time, when it
was blocked (waiting for the GIL, for BLAS's helper threads, in the blocking call), is system
time.

"On a CPU" is the thread's task clock (perf_event_open, PERF_COUNT_SW_TASK_CLOCK: wall time
from each switch-in to the next switch-out), not its CPU time (time.thread_time). The two differ
in a virtual machine: when the hypervisor takes the vCPU away (steal time), the guest kernel
leaves that time out of the thread's CPU time (CONFIG_PARAVIRT_TIME_ACCOUNTING) and out of its
run-queue wait (the thread is the one running), so CPU time + run-queue wait counts it as
blocked, although the thread never stopped and nothing in the guest could see it stop. On a
VM with steal that can be 5-22% of a 0.4 s phase in bursts (for example thread_time
0.350 s, task clock 0.449 s, wall 0.450 s, 10 ticks of steal in /proc/stat meanwhile). Where
perf_event_open is refused (kernel.perf_event_paranoid 3 without privileges) the truth falls
back to thread_time and says so in its file ("busy_clock").

At exit the truths are written as JSON to the file named by $HEATLINE_TRUTH (when set):
{qualname: {"wall_s", "cpu_s", "on_cpu_s", "python_s", "native_s", "system_s", "cpu_wait_s",
"timeslices", "threads", "busy_clock", "kind"}}: cpu_s is thread_time's, on_cpu_s the task
clock's (thread_time's in the fallback), busy_clock "task-clock" or "thread_time", kind the
phase's declared kind, cpu_wait_s its run-queue waits, timeslices how many times its threads
got a CPU (schedstat's third field), threads how many calls of it were timed. A "system"
phase's time on a CPU (entering the call, Popen's Python code before a blocking read) is put
under native_s, but the truth does not know its kind: Python or native.
"""

import atexit
import ctypes
import functools
import json
import os
import platform
import struct
import threading
import time

_truth = {}
_lock = threading.Lock()


def _schedstat():
    """This thread's run-queue wait so far (seconds) and its count of timeslices."""
    try:
        with open(f"/proc/self/task/{threading.get_native_id()}/schedstat") as f:
            fields = f.read().split()
        return int(fields[1]) / 1e9, int(fields[2])
    except (OSError, IndexError, ValueError):
        return 0.0, 0


def _runqueue_wait_s():
    return _schedstat()[0]


_PERF_EVENT_OPEN = {"x86_64": 298, "aarch64": 241}.get(platform.machine())
_PERF_TYPE_SOFTWARE, _PERF_COUNT_SW_TASK_CLOCK = 1, 1
_EXCLUDE_KERNEL, _EXCLUDE_HV = 1 << 5, 1 << 6  # bits of perf_event_attr's flags word
_PERF_FLAG_FD_CLOEXEC = 8


def _open_task_clock():
    """A counter of the calling thread's task clock (ns on a CPU, steal time included), or
    None where perf_event_open is missing or refused."""
    if _PERF_EVENT_OPEN is None:
        return None
    attr = bytearray(128)  # struct perf_event_attr; unset fields zero
    struct.pack_into("IIQ", attr, 0, _PERF_TYPE_SOFTWARE, len(attr), _PERF_COUNT_SW_TASK_CLOCK)
    struct.pack_into("Q", attr, 40, _EXCLUDE_KERNEL | _EXCLUDE_HV)  # allowed unprivileged
    buffer = (ctypes.c_char * len(attr)).from_buffer(attr)
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.syscall(_PERF_EVENT_OPEN, buffer, 0, -1, -1, _PERF_FLAG_FD_CLOEXEC)
    return fd if fd >= 0 else None


class _BusyClock:
    """The calling thread's busy time so far, in seconds: on a CPU (task clock, else
    thread_time) plus runnable but waiting for one. Opened per measurement and closed after
    it, so no descriptor outlives the phase."""

    def __init__(self):
        self.fd = _open_task_clock()
        self.name = "thread_time" if self.fd is None else "task-clock"

    def on_cpu_s(self):
        if self.fd is None:
            return time.thread_time()
        return struct.unpack("Q", os.read(self.fd, 8))[0] / 1e9

    def busy_s(self):
        return self.on_cpu_s() + _runqueue_wait_s()

    def close(self):
        if self.fd is not None:
            os.close(self.fd)


def phase(kind):
    assert kind in ("python", "native", "system")

    def decorate(function):
        @functools.wraps(function)
        def timed(*args, **kwargs):
            # Reading /proc releases the GIL, and getting it back can take a whole switch
            # interval when threads compete for it: that wait belongs to this harness, not to
            # the phase, so the /proc reads stay outside the timed window on both ends.
            clock = _BusyClock()
            (waited, slices), on_cpu = _schedstat(), clock.on_cpu_s()
            cpu = time.thread_time()
            wall = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                wall = time.perf_counter() - wall
                cpu = time.thread_time() - cpu
                on_cpu = min(clock.on_cpu_s() - on_cpu, wall)
                waited_now, slices_now = _schedstat()
                busy = min(on_cpu + waited_now - waited, wall)
                clock.close()
                split = {"python_s": 0.0, "native_s": 0.0, "system_s": 0.0}
                busy_kind = "native" if kind == "system" else kind
                split[busy_kind + "_s"] = on_cpu
                split["cpu_wait_s"] = busy - on_cpu
                split["system_s"] = wall - busy
                with _lock:
                    entry = _truth.setdefault(
                        function.__qualname__,
                        {
                            "wall_s": 0.0,
                            "cpu_s": 0.0,
                            "on_cpu_s": 0.0,
                            "python_s": 0.0,
                            "native_s": 0.0,
                            "system_s": 0.0,
                            "cpu_wait_s": 0.0,
                        },
                    )
                    entry["busy_clock"] = clock.name
                    entry["kind"] = kind
                    entry["wall_s"] += wall
                    entry["cpu_s"] += cpu
                    entry["on_cpu_s"] += on_cpu
                    entry["timeslices"] = entry.get("timeslices", 0) + slices_now - slices
                    entry["threads"] = entry.get("threads", 0) + 1
                    for key, value in split.items():
                        entry[key] += value

        return timed

    return decorate


@atexit.register
def _write():
    path = os.environ.get("HEATLINE_TRUTH")
    if path:
        with open(path, "w") as f:
            json.dump(_truth, f, indent=1)


def _voluntary_switches():
    """How many times this thread has blocked so far: each time it gave up its CPU to wait
    (sleep, I/O, a lock, the GIL) is one voluntary context switch."""
    try:
        with open(f"/proc/self/task/{threading.get_native_id()}/status") as f:
            for line in f:
                if line.startswith("voluntary_ctxt_switches:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


class Span:
    """The calling thread over a with-block: its wall time, its busy time (as @phase measures
    it), its time on a CPU (`on_cpu_s`: busy less the run-queue waits), its run-queue waits
    (`cpu_wait_s`: busy less the time on a CPU) and how many times it
    blocked (`blocks`, voluntary context switches: the stretches of
    blocked time it went through, GIL hand-overs included). For code that cannot be a phase
    function of its own (a line of the program that waits for its children): the block's lines
    stay the program's, with no frame of this module under them. The /proc reads are outside
    the timed window; a block they cause is counted, which only overstates `blocks`."""

    def __enter__(self):
        self._clock = _BusyClock()
        self._blocks = _voluntary_switches()
        self._waited, self._on_cpu = _runqueue_wait_s(), self._clock.on_cpu_s()
        self._wall = time.perf_counter()
        return self

    def __exit__(self, *exc_info):
        self.wall_s = time.perf_counter() - self._wall
        self.on_cpu_s = min(self._clock.on_cpu_s() - self._on_cpu, self.wall_s)
        self.busy_s = min(self.on_cpu_s + _runqueue_wait_s() - self._waited, self.wall_s)
        self.cpu_wait_s = self.busy_s - self.on_cpu_s
        self.blocks = _voluntary_switches() - self._blocks
        self._clock.close()
        return False


def busy_s(function, *args):
    """Run ``function(*args)`` on this thread; the thread's busy time while it ran (on a CPU
    plus runnable but waiting for one, as @phase measures it: what heatline charges it as
    python + native + cpu_wait). For work done in child processes, which report it back to
    the parent."""
    clock = _BusyClock()
    try:
        busy = clock.busy_s()
        function(*args)
        return clock.busy_s() - busy
    finally:
        clock.close()
