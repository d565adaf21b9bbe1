"""Ground truth for the Python processes of a command (heatline -- CMD) and for a console
script on PATH (heatline NAME): a pure-Python loop, whose busy time (on a CPU plus waiting
for one) the process measures and prints as one JSON line with its name, pid, parent and
sys.argv[0]; `main()` is what a console script calls. An exit status given after the name is
the process's."""

import json
import os
import sys

from _truth import busy_s


def loop(n):
    total = 0
    for i in range(n):
        total += i % 7
    return total


def main():
    name = sys.argv[1] if len(sys.argv) > 1 else "work"
    busy = busy_s(loop, 3_000_000)
    print(json.dumps({"name": name, "busy_s": busy, "pid": os.getpid(), "ppid": os.getppid(),
                      "argv0": sys.argv[0]}), flush=True)
    return int(sys.argv[2]) if len(sys.argv) > 2 else 0


if __name__ == "__main__":
    sys.exit(main())
