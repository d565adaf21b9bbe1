"""A program with known costs for `heatline check`: it holds 64 MiB allocated on one line
(an allocation that large is always counted exactly), burns CPU until its process has used
BUSY_S seconds more, and writes the truth (process CPU and wall time from its start) as JSON
to argv[1]. Exits with status argv[2] (default 0)."""

import json
import sys
import time

BUSY_S = 0.3

wall = time.perf_counter()
cpu = time.process_time()


def hold():
    return bytearray(64 * 1024 * 1024)  # line 17: the line budgets name


held = hold()
while time.process_time() - cpu < BUSY_S:
    pass
print("budget program done")
with open(sys.argv[1], "w") as f:
    json.dump({"cpu_s": time.process_time() - cpu, "wall_s": time.perf_counter() - wall,
               "held_bytes": len(held)}, f)
sys.exit(int(sys.argv[2]) if len(sys.argv) > 2 else 0)
