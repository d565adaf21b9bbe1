"""Attribution accuracy on the ground-truth targets (tests/targets/), repeated.

For each target and each run: every phase function's share of time, and its Python / native /
system split, compared with the truth the target measured itself. Prints the worst error in
percentage points per target over all runs. Usage:

    python bench/accuracy.py [--runs N] [--interval SECONDS]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGETS = ["main_thread.py", "threads.py"]
KINDS = ("python_s", "native_s", "system_s")


def errors(truth, profile):
    measured = {f["qualname"]: f for entry in profile["files"].values() for f in entry["functions"]}
    names = sorted(truth)
    got_total = {n: sum(measured.get(n, {}).get(k, 0.0) for k in KINDS) for n in names}
    share_got = sum(got_total.values()) or 1.0
    share_want = sum(truth[n]["wall_s"] for n in names)
    share_errors, split_errors = [], []
    for n in names:
        share_errors.append(abs(100 * got_total[n] / share_got - 100 * truth[n]["wall_s"] / share_want))
        for k in KINDS:
            got = 100 * measured.get(n, {}).get(k, 0.0) / (got_total[n] or 1.0)
            want = 100 * truth[n][k] / truth[n]["wall_s"]
            split_errors.append(abs(got - want))
    return max(share_errors), max(split_errors)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--interval", default="0.01")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for target in TARGETS:
            worst_share = worst_split = 0.0
            for _ in range(args.runs):
                truth_path, profile_path = os.path.join(tmp, "t.json"), os.path.join(tmp, "p.json")
                subprocess.run(
                    [sys.executable, "-m", "heatline", "-q", "--cpu-sampling-interval", args.interval,
                     "-o", profile_path, os.path.join(ROOT, "tests", "targets", target)],
                    env=dict(os.environ, HEATLINE_TRUTH=truth_path), check=True,
                )
                with open(truth_path) as t, open(profile_path) as p:
                    share, split = errors(json.load(t), json.load(p))
                worst_share, worst_split = max(worst_share, share), max(worst_split, split)
            print(f"{target}: {args.runs} runs at {args.interval} s: worst function-share error "
                  f"{worst_share:.2f} pp, worst Python/native/system split error {worst_split:.2f} pp")


if __name__ == "__main__":
    main()
