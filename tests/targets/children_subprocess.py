"""Ground truth for a Python subprocess: the child (this file run with "child") runs a
pure-Python loop and prints its busy time; the parent runs it with subprocess and prints it."""

import json
import subprocess
import sys
import threading
import time


def _runqueue_wait_s():
    try:
        with open(f"/proc/self/task/{threading.get_native_id()}/schedstat") as f:
            return int(f.read().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return 0.0


def child_work(n):
    waited, cpu = _runqueue_wait_s(), time.thread_time()
    total = 0
    for i in range(n):
        total += i % 7
    return time.thread_time() - cpu + _runqueue_wait_s() - waited


if __name__ == "__main__":
    if sys.argv[1:] == ["child"]:
        print(json.dumps({"busy_s": child_work(3_000_000)}))
    else:
        done = subprocess.run(  # the parent waits here
            [sys.executable, __file__, "child"], capture_output=True, text=True, check=True
        )
        print(done.stdout, end="")
