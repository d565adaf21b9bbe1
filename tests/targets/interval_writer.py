"""--write-interval: works until heatline has written its -o file once, keeps a copy of that
mid-run profile, works some more, and prints its threads (which must be only its own)."""

import os
import sys
import threading

out, copy = sys.argv[1], sys.argv[2]
before = [thread.name for thread in threading.enumerate()]
polls = 0
while not os.path.exists(out):  # written (atomically) by heatline while this loop runs
    polls += 1
with open(out, "rb") as mid_run:
    data = mid_run.read()
with open(copy, "wb") as kept:
    kept.write(data)
total = 0
for i in range(3_000_000):  # more work after the mid-run write
    total += i % 7
print(before, [thread.name for thread in threading.enumerate()], threading.active_count())
