"""Ground truth for a Python subprocess: the child (this file run with "child") runs a
pure-Python loop and prints its busy time; the parent runs it with subprocess and prints it,
with its own figures over the line where it waits (wall time, busy time, times it blocked:
_truth.Span)."""

import json
import subprocess
import sys

from _truth import Span, busy_s


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
        with Span() as parent:
            done = subprocess.run(  # the parent waits here
                [sys.executable, __file__, "child"], capture_output=True, text=True, check=True
            )
        truth = json.loads(done.stdout)
        truth["parent"] = {"wall_s": parent.wall_s, "busy_s": parent.busy_s,
                           "blocks": parent.blocks}
        print(json.dumps(truth))
