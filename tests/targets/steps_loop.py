"""A training loop whose steps heatline.step() marks, with its own step clock as the truth:
prints a JSON object on stdout, ``durations_s`` (each step's wall time, read right after each
heatline.step() call) and ``torch_imported`` (whether anything imported torch).

Each step computes a little (region "compute") and sleeps (region "data": data loading, steady
whatever the machine's load).
Arguments: ``--slow N`` makes step N take 0.5 s instead of 0.08 s; ``--steps N`` runs N steps
(default 10); ``--step-s S`` sets the usual step's time."""

import json
import sys
import time

import heatline

arguments = sys.argv[1:]
slow = int(arguments[arguments.index("--slow") + 1]) if "--slow" in arguments else 0
count = int(arguments[arguments.index("--steps") + 1]) if "--steps" in arguments else 10
step_s = float(arguments[arguments.index("--step-s") + 1]) if "--step-s" in arguments else 0.08


def compute():
    total = 0
    for i in range(20000):
        total += i * i
    return total


marks = []
heatline.step()
marks.append(time.perf_counter())
for number in range(1, count + 1):
    with heatline.region("compute"):
        compute()
    with heatline.region("data"):
        time.sleep(0.5 if number == slow else step_s)  # the data line
    heatline.step()
    marks.append(time.perf_counter())

durations = [end - start for start, end in zip(marks, marks[1:])]
print(json.dumps({"durations_s": durations, "torch_imported": "torch" in sys.modules}))
