"""Child start-up cost: the wall time of `python -c pass` children started one after another
with subprocess, under heatline (each child is profiled) and under python. Run it both ways:

    python bench/child_startup.py 30
    heatline -q bench/child_startup.py 30
    heatline -q --no-children bench/child_startup.py 30

Prints the median and the 10th/90th percentiles of the per-child wall time, in ms."""

import statistics
import subprocess
import sys
import time


def main(count):
    times = []
    for _ in range(count):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    deciles = statistics.quantiles(times, n=10)
    print(f"median {statistics.median(times):.1f} ms, p10 {deciles[0]:.1f}, p90 {deciles[-1]:.1f}"
          f" ({count} children)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 30)
