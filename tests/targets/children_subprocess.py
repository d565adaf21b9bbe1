"""Ground truth for a Python subprocess: the child (this file run with "child") runs a
pure-Python loop and prints its busy time; the parent runs it with subprocess and prints it."""

import json
import subprocess
import sys

from _truth import busy_s


def loop(n):
    total = 0
    for i in range(n):
        total += i % 7
    return total


def child_work(n):
    return busy_s(loop, n)


if __name__ == "__main__":
    if sys.argv[1:] == ["child"]:
        print(json.dumps({"busy_s": child_work(8_000_000)}))
    else:
        done = subprocess.run(  # the parent waits here
            [sys.executable, __file__, "child"], capture_output=True, text=True, check=True
        )
        print(done.stdout, end="")
