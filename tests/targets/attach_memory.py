"""For heatline attach: memory allocated before the attach and held (50 MiB, one line), then a
line allocating a 1 MiB bytearray and freeing it again every 10 ms until DIRECTORY/finish, each
allocation's time recorded (time.time(), right after it), so the test knows how many fell in
the attached window. argv: DIRECTORY. Writes DIRECTORY/ready (its pid), DIRECTORY/truth.json:
{"block_bytes": ..., "times": [...]}."""

import json
import os
import sys
import time

from _attachable import allow_tracing, mark

DIRECTORY = sys.argv[1]
BLOCK = 1 << 20

allow_tracing()
held = bytearray(50 << 20)  # held before the attach: not the window's
mark(DIRECTORY, "ready", str(os.getpid()))
times = []
while not os.path.exists(os.path.join(DIRECTORY, "finish")):
    block = bytearray(BLOCK)  # the window's allocations
    times.append(time.time())
    del block
    time.sleep(0.01)
mark(DIRECTORY, "truth.json", json.dumps({"block_bytes": BLOCK, "times": times}))
print(len(held))
