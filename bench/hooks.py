"""The engine's own cost, without start-up: one workload of bench/workloads.py run in this
process, alternately with no profiler, with the engine CPU-only and with the full engine (CPU +
memory hooks), N times each; prints the fastest and the median time of each and their ratios to
the unprofiled runs. The fastest run is the least disturbed by the rest of the machine, so its
ratio is the cleanest view of what the hooks cost per allocation. Usage:

    python bench/hooks.py [--runs N] [--window BYTES] WORKLOAD

(heatline installed or on PYTHONPATH). bench/run.py gives the figures a user sees, start-up
and writing the profile included.
"""

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import workloads  # noqa: E402

from heatline.engine.session import Session  # noqa: E402


def timed(work, window):
    """Seconds work() takes; under a session with this memory window (0: CPU only), or with no
    profiler at all when window is None."""
    session = Session(program=work.__name__, argv=[], memory_sampling_window_bytes=window) if window is not None else None
    if session is not None:
        session.start()
    start = time.perf_counter()
    work()
    elapsed = time.perf_counter() - start
    if session is not None:
        session.stop()
    return elapsed


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workload", choices=["pure_python", "alloc_python", "numpy_heavy"])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--window", type=int, default=64 * 1024)
    args = parser.parse_args()
    work = getattr(workloads, args.workload)
    modes = {"unprofiled": None, "cpu-only": 0, "full": args.window}
    times = {name: [] for name in modes}
    for _ in range(args.runs):
        for name, window in modes.items():
            times[name].append(timed(work, window))
    best = min(times["unprofiled"])
    middle = statistics.median(times["unprofiled"])
    print(f"{args.workload}, {args.runs} interleaved runs in one process")
    for name, values in times.items():
        print(f"  {name:10s} fastest {min(values):.3f} s (x{min(values) / best:.3f})   "
              f"median {statistics.median(values):.3f} s (x{statistics.median(values) / middle:.3f})")


if __name__ == "__main__":
    main()
