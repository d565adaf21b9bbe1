"""Leaves SIGTERM alone, says it is ready and computes until killed (the test sends SIGTERM);
what it wrote without flushing is lost, as with any process killed by SIGTERM."""

import signal
import sys
import time


def spin(cpu_seconds):
    # At least this much CPU time in this function, however loaded the machine is, so the
    # profile must show it.
    end = time.process_time() + cpu_seconds
    total = 0
    while time.process_time() < end:
        total += sum(range(100))


print("default:", signal.getsignal(signal.SIGTERM) is signal.SIG_DFL)
spin(0.3)
print("ready", flush=True)
sys.stdout.write("never flushed\n")
spin(float("inf"))
