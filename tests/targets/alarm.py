"""The program's own ITIMER_REAL + SIGALRM must keep working under the profiler."""

import signal
import sys
import time

WANTED = 20
fired = 0


def on_alarm(signum, frame):
    global fired
    fired += 1


def spin_until_enough_alarms():
    deadline = time.monotonic() + 10
    total = 0
    while fired < WANTED and time.monotonic() < deadline:
        total += sum(range(1000))
    return total


signal.signal(signal.SIGALRM, on_alarm)
signal.setitimer(signal.ITIMER_REAL, 0.005, 0.005)
spin_until_enough_alarms()
signal.setitimer(signal.ITIMER_REAL, 0, 0)
print("alarms:", fired)
sys.exit(0 if fired >= WANTED else 1)
