"""Ground truth for joblib's loky workers running functions of __main__: cloudpickle sends
them by value, and the code it rebuilds in a worker is named <dynamic-code>, not this file.
Parallel(n_jobs=2, backend="loky") runs `task` on known inputs; each call measures the busy
time (on a CPU plus runnable, _truth.busy_s) of its loop, `spin`. Prints one JSON line: the
summed busy time and the results."""

import json

from _truth import busy_s
from joblib import Parallel, delayed

ITERATIONS = 1_500_000


def spin(n):
    total = 0
    for i in range(n):
        total += i % 7
    return total


def task(n):
    result = []
    busy = busy_s(lambda: result.append(spin(n)))
    return busy, result[0]


if __name__ == "__main__":
    done = Parallel(n_jobs=2, backend="loky")(delayed(task)(ITERATIONS + i) for i in range(4))
    print(json.dumps({"busy_s": sum(busy for busy, _ in done),
                      "results": [result for _, result in done]}))
