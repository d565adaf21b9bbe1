"""Ground truth for the target programs: each phase times itself.

A phase is a function decorated with @phase(kind). While it runs, the thread running it
measures its own wall time (time.perf_counter) and CPU time (time.thread_time). Its true
profile then follows from what the phase does by construction:

  kind "python": executing bytecode while on a CPU.
  kind "native": inside C code (numpy, BLAS, hashlib) while on a CPU.
  kind "system": inside a blocking call (sleep, I/O, lock, join): blocked, except for the
    moments it is busy inside that call (entering it, and after the wake-up, runnable until a
    CPU is free: on a busy machine that wait is milliseconds per wake-up), which are native.

For every phase the busy time is measured, never assumed (a 0.5 s sleep on a loaded 2-core
machine was seen runnable for 3% of it). For python and native phases, the thread's busy time
is of that kind and the rest of its wall time, when it was blocked (waiting for the GIL or for
BLAS's helper threads), is system time. Busy time is its CPU time (thread_time) plus the time
it spent runnable but waiting for a CPU (the second field of /proc/thread-self/schedstat),
because a thread the machine keeps off its CPU is still busy with its own work, and heatline's
definition of system time is "blocked".

At exit the truths are written as JSON to the file named by $HEATLINE_TRUTH (when set):
{qualname: {"wall_s", "cpu_s", "python_s", "native_s", "system_s"}}.
"""

import atexit
import functools
import json
import os
import threading
import time

_truth = {}
_lock = threading.Lock()


def _runqueue_wait_s():
    try:
        with open(f"/proc/self/task/{threading.get_native_id()}/schedstat") as f:
            return int(f.read().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return 0.0


def phase(kind):
    assert kind in ("python", "native", "system")

    def decorate(function):
        @functools.wraps(function)
        def timed(*args, **kwargs):
            # Reading /proc releases the GIL, and getting it back can take a whole switch
            # interval when threads compete for it: that wait belongs to this harness, not to
            # the phase, so the /proc reads stay outside the timed window on both ends.
            waited = _runqueue_wait_s()
            cpu = time.thread_time()
            wall = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                wall = time.perf_counter() - wall
                cpu = time.thread_time() - cpu
                busy = min(cpu + _runqueue_wait_s() - waited, wall)
                split = {"python_s": 0.0, "native_s": 0.0, "system_s": 0.0}
                busy_kind = "native" if kind == "system" else kind
                split[busy_kind + "_s"] = busy
                split["system_s"] = wall - busy
                with _lock:
                    entry = _truth.setdefault(
                        function.__qualname__,
                        {
                            "wall_s": 0.0,
                            "cpu_s": 0.0,
                            "python_s": 0.0,
                            "native_s": 0.0,
                            "system_s": 0.0,
                        },
                    )
                    entry["wall_s"] += wall
                    entry["cpu_s"] += cpu
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


def busy_s(function, *args):
    """Run ``function(*args)`` on this thread; the thread's busy time while it ran (CPU time
    plus time runnable but waiting for a CPU, as @phase measures it). For work done in child
    processes, which report it back to the parent."""
    waited, cpu = _runqueue_wait_s(), time.thread_time()
    function(*args)
    return time.thread_time() - cpu + _runqueue_wait_s() - waited
