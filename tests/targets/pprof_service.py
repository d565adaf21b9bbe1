"""The pull endpoint's target (tests/integration/test_pprof_server.py): a service whose truth is
known. It holds 64 MiB allocated by hold_memory() (1 MiB bytearrays: the memory held per line
now), then spins in hot_function() on its main thread while a helper thread sleeps (time that is
not on a CPU), until killed; the helper notes when it wakes (argv[1].wakes).

argv[1]: a file written once it spins. With argv[2] == "api", the profile and its server are
started by heatline.start(pprof_server="127.0.0.1:0") instead of the command.
"""

import os
import sys
import threading
import time

if sys.argv[2:] == ["api"]:
    import heatline

    heatline.start(pprof_server="127.0.0.1:0")


def hold_memory():
    held = []
    for _ in range(64):  # a loop, not a comprehension: 3.9-3.11 give those a function
        held.append(bytearray(1 << 20))
    return held


def hot_function():
    n = 0
    while n >= 0: n += 1  # noqa: E701 -- one line


def helper():
    # Each wake-up's time (CLOCK_MONOTONIC) in argv[1].wakes: between two, the helper slept
    # 0.05 s and was awake for the rest (waiting for a CPU and for the GIL, writing this), the
    # only time the CPU profile may charge to it.
    with open(sys.argv[1] + ".wakes", "w", buffering=1) as wakes:
        while True:
            time.sleep(0.05)
            wakes.write(f"{time.monotonic()}\n")


held = hold_memory()
threading.Thread(target=helper, daemon=True).start()
with open(sys.argv[1] + ".tmp", "w") as ready:
    ready.write(f"{os.getpid()} {threading.active_count()}\n")
os.replace(sys.argv[1] + ".tmp", sys.argv[1])
hot_function()
