"""What every heatline run costs whatever the program does: start-up (imports, the engine's
start) and the end (the profile built and written), counted in instructions by callgrind, which
repeats to a fraction of a percent on a machine too busy for timings to mean anything.

    python bench/fixed_cost.py [--python PYTHON] [--runs 3]

Runs an empty program (`pass`) under plain python and under `heatline -q -o FILE` (--cpu-only,
and the full profile), each --runs times under `valgrind --tool=callgrind --separate-threads=yes`
with PYTHONHASHSEED=0, and prints the median instructions of the main thread (the sampler
thread's ticks depend on how long valgrind takes, not on heatline) and heatline's excess over
python's. Needs valgrind. The interpreter is --python's (default: this one); heatline must be
importable there with its bytecode written (an installed package, or `python -m compileall`
run on the source tree): otherwise the excess is mostly compiling heatline's sources.
"""

import argparse
import glob
import os
import statistics
import subprocess
import sys
import tempfile


def main_thread_instructions(command, directory):
    """Instructions callgrind counted in the main thread of one run of command."""
    for old in glob.glob(os.path.join(directory, "cg.*")):
        os.unlink(old)
    subprocess.run(["valgrind", "--tool=callgrind", "--separate-threads=yes",
                    "--callgrind-out-file=" + os.path.join(directory, "cg.%p"), *command],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True,
                   env={**os.environ, "PYTHONHASHSEED": "0"})
    main = [path for path in glob.glob(os.path.join(directory, "cg.*")) if path.endswith("-01")]
    with open(main[0], encoding="utf-8") as f:
        for line in f:
            if line.startswith("totals:"):
                return int(line.split()[1])
    raise RuntimeError(f"no totals in {main[0]}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--runs", type=int, default=3)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        empty = os.path.join(directory, "empty.py")
        with open(empty, "w", encoding="utf-8") as f:
            f.write("pass\n")
        out = os.path.join(directory, "p.json")
        modes = {
            "python": [options.python, empty],
            "heatline --cpu-only": [options.python, "-m", "heatline", "-q", "--cpu-only", "-o",
                                    out, empty],
            "heatline (full)": [options.python, "-m", "heatline", "-q", "-o", out, empty],
        }
        counts = {mode: statistics.median(main_thread_instructions(command, directory)
                                          for _ in range(options.runs))
                  for mode, command in modes.items()}
    print("| run of an empty program | instructions (main thread) | over python's |")
    print("|---|---|---|")
    for mode, count in counts.items():
        over = "-" if mode == "python" else f"{(count - counts['python']) / 1e6:.1f} M"
        print(f"| {mode} | {count / 1e6:.1f} M | {over} |")


if __name__ == "__main__":
    main()
