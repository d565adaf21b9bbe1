"""heatline's own workloads: bench/run.py --benchmarks pure_python,alloc_python,numpy_heavy
(bench/heatbench/suite.py copies this file beside a driver that calls one), bench/hooks.py, or
`python workloads.py NAME`."""

import sys


def pure_python():
    # Function calls, arithmetic, dicts and lists: the interpreter's own work.
    def fib(n):
        return n if n < 2 else fib(n - 1) + fib(n - 2)

    counts = {}
    for i in range(5_000_000):
        key = i % 97
        counts[key] = counts.get(key, 0) + i
    return fib(27) + len(counts)


def alloc_python():
    # Allocation-heavy pure Python: builds and drops millions of small objects (dicts, strs,
    # lists, ints), the worst case for allocation hooks.
    total = 0
    for _ in range(25):
        rows = [{"id": i, "name": str(i), "tags": [i, i + 1]} for i in range(60_000)]
        total += sum(len(row["name"]) for row in rows)
    return total


def numpy_heavy():
    import numpy as np

    rng = np.random.default_rng(1)
    total = 0.0
    for _ in range(16):
        a = rng.random((700, 700))
        total += float(np.linalg.norm(a @ a.T))
        total += float(np.sort(rng.random(2_000_000))[1000])
    return total


if __name__ == "__main__":
    {"pure_python": pure_python, "alloc_python": alloc_python, "numpy_heavy": numpy_heavy}[
        sys.argv[1]
    ]()
