"""For heatline attach: a loop whose steps heatline.step() marks, each a region "work" (about
50 ms of CPU) inside a region "step", running before anything attaches. Runs until
DIRECTORY/finish; writes DIRECTORY/ready once the loop runs; at the end prints one JSON line:
each step's start and wall time on the program's own clock (time.monotonic, the clock heatline
stamps the profile's start with too) and the number of steps."""

import json
import os
import sys
import time

import heatline
from _attachable import allow_tracing, mark

DIRECTORY = sys.argv[1]


def work(seconds):
    end = time.thread_time() + seconds
    total = 0
    while time.thread_time() < end:
        total += 1
    return total


allow_tracing()
starts = []
heatline.step()
starts.append(time.time())
while not os.path.exists(os.path.join(DIRECTORY, "finish")):
    with heatline.region("step"):
        with heatline.region("work"):
            work(0.05)
    heatline.step()
    starts.append(time.time())
    if len(starts) == 3:
        mark(DIRECTORY, "ready", str(os.getpid()))
print(json.dumps({"marks": starts}))
