"""Child processes whose rows make a wide Processes table: Python children started with long
command lines (many long arguments), and one that ends with os._exit(0). Each child burns a
little CPU so that it is sampled, and prints its pid; the parent prints the pids as JSON."""

import json
import os
import subprocess
import sys


def burn():
    total = 0
    for i in range(300_000):
        total += i % 7
    return total


if sys.argv[1:2] == ["child"]:
    burn()
    print(os.getpid(), flush=True)
    if sys.argv[2] == "os_exit":
        os._exit(0)
    sys.exit(0)
else:
    long_arguments = [f"--option-number-{i}=/a/rather/long/path/to/some/input/file_{i}.dat"
                      for i in range(6)]
    pids = []
    for how in ("plain", "os_exit", "plain"):
        done = subprocess.run([sys.executable, __file__, "child", how, *long_arguments],
                              capture_output=True, text=True, check=True)
        pids.append(int(done.stdout))
    burn()
    print(json.dumps(pids))
