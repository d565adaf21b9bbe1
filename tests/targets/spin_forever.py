"""Says it is ready, then computes until interrupted (the test sends SIGINT)."""

import sys


def spin():
    total = 0
    while True:
        total += sum(range(100))


print("ready", flush=True)
sys.stdout.flush()
spin()
