"""Ground truth for the target programs: each phase times itself.

A phase is a function decorated with @phase(kind). While it runs, the thread running it
measures its own wall time (time.perf_counter) and CPU time (time.thread_time). Its true
profile then follows from what the phase does by construction:

  kind "python": executing bytecode while on a CPU; off-CPU time (descheduled, GIL wait) is
                 system time.
  kind "native": inside C code (numpy, BLAS, hashlib); off-CPU time is system time.
  kind "system": blocked (sleep, I/O, lock, join): all of its wall time is system time.

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


def phase(kind):
    assert kind in ("python", "native", "system")

    def decorate(function):
        @functools.wraps(function)
        def timed(*args, **kwargs):
            wall, cpu = time.perf_counter(), time.thread_time()
            try:
                return function(*args, **kwargs)
            finally:
                wall = time.perf_counter() - wall
                cpu = min(time.thread_time() - cpu, wall)
                split = {"python_s": 0.0, "native_s": 0.0, "system_s": wall}
                if kind != "system":
                    split = {"python_s": 0.0, "native_s": 0.0, "system_s": wall - cpu}
                    split[kind + "_s"] = cpu
                with _lock:
                    entry = _truth.setdefault(
                        function.__qualname__,
                        {"wall_s": 0.0, "cpu_s": 0.0, "python_s": 0.0, "native_s": 0.0, "system_s": 0.0},
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
