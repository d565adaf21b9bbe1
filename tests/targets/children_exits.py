"""Python subprocesses that end in the ways a program's children do: sys.exit(3), a plain end,
an uncaught exception and an uncaught KeyboardInterrupt. Prints the statuses the parent's waits
saw (negative: killed by that signal), for the profile's `exit` to be checked against."""

import json
import subprocess
import sys

if sys.argv[1:2] == ["child"]:
    how = sys.argv[2]
    if how == "exit3":
        sys.exit(3)
    if how == "raise":
        raise ValueError("the child fails")
    if how == "interrupt":
        raise KeyboardInterrupt
    sys.exit()  # a plain end
else:
    statuses = {}
    for how in ("exit3", "plain", "raise", "interrupt"):
        done = subprocess.run([sys.executable, __file__, "child", how], capture_output=True)
        statuses[how] = done.returncode
    print(json.dumps(statuses))
