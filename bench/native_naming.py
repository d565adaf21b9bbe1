"""What naming native frames costs at the end of a run of a program that imports torch (the
budget: under 0.5 s): heatline.stop() (snapshot, naming, profile) timed with native frames
on and off, in fresh processes, interleaved. Needs torch (`pip install -e '.[test,torch]'`).

    python bench/native_naming.py [ROUNDS]
"""

import subprocess
import sys

CHILD = r"""
import sys, time
import heatline
heatline.start(native=sys.argv[1] == "on")
import torch
a = torch.randn(600, 600)
t = time.perf_counter()
while time.perf_counter() - t < 1.0:
    a @ a
t = time.perf_counter()
heatline.stop()
print(time.perf_counter() - t)
"""


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    times = {"on": [], "off": []}
    for _ in range(rounds):
        for mode in ("on", "off"):
            out = subprocess.run([sys.executable, "-c", CHILD, mode], capture_output=True,
                                 text=True, check=True).stdout
            times[mode].append(float(out.split()[-1]))
    for mode, values in times.items():
        values.sort()
        print(f"native {mode}: stop() median {values[len(values) // 2]:.3f} s "
              f"(min {values[0]:.3f}, max {values[-1]:.3f}) over {rounds} runs")
    on, off = sorted(times["on"]), sorted(times["off"])
    print(f"naming native frames: {on[len(on) // 2] - off[len(off) // 2]:.3f} s (median on - off)")


if __name__ == "__main__":
    main()
