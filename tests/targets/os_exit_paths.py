"""Leaves through os._exit(3): from an atexit handler (argv[1] "atexit"), or from the program
itself ("direct"). Output still in sys.stdout's buffer is lost, as os._exit loses it (when
stdout is a pipe, block-buffered, and PYTHONUNBUFFERED is empty). The hot loop is the line
a profile must show."""

import atexit
import os
import sys


def hot_loop():
    total = 0
    for i in range(600_000):
        total += i % 7
    return total


def leave():
    print("in the atexit handler")  # buffered: lost with the rest
    os._exit(3)


if sys.argv[1] == "atexit":
    atexit.register(leave)
print("before the loop")  # buffered: lost, unless the script's end flushes it (atexit)
hot_loop()
sys.stderr.write("after the loop\n")
sys.stderr.flush()
if sys.argv[1] == "direct":
    os._exit(3)
