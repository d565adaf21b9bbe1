"""Native frames for a thread without a Python thread state (docs/accuracy.md): builds
tests/targets/_burn.c, runs tests/targets/native_thread_burn.py under heatline RUNS times (a C
pthread burning burn_a and burn_b 1:3, measuring each with its CPU clock) and prints, per run,
the true and the profiled share of burn_a and the thread's CPU time, true and profiled.

    python bench/native_threads_accuracy.py [RUNS]
"""

import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TARGETS = os.path.join(os.path.dirname(HERE), "tests", "targets")


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    with tempfile.TemporaryDirectory() as tmp:
        library = os.path.join(tmp, "libburn.so")
        subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-pthread", "-o", library,
                        os.path.join(TARGETS, "_burn.c")], check=True)
        for run in range(runs):
            truth_path, out = os.path.join(tmp, "truth.json"), os.path.join(tmp, "p.json")
            subprocess.run([sys.executable, "-m", "heatline", "-q", "-o", out,
                            os.path.join(TARGETS, "native_thread_burn.py"), library,
                            truth_path], check=True)
            with open(truth_path) as f:
                truth = json.load(f)
            with open(out) as f:
                profile = json.load(f)
            thread = next(t for t in profile["threads"] if t["native_id"] == truth["tid"])
            seconds = {f["symbol"]: f["seconds"] for f in thread["native_functions"]}
            named = sum(seconds.values())
            true_s = (truth["a_ns"] + truth["b_ns"]) / 1e9
            print(f"run {run + 1}: burn_a true {truth['a_ns'] / 1e9 / true_s:.1%} "
                  f"heatline {seconds.get('burn_a', 0) / named:.1%}, "
                  f"burn_b heatline {seconds.get('burn_b', 0) / named:.1%}; "
                  f"CPU true {true_s:.2f} s, heatline {thread['cpu_s']:.2f} s "
                  f"(named {named:.2f} s, max gap {profile['max_sample_gap_s'] * 1e3:.0f} ms)")


if __name__ == "__main__":
    main()
