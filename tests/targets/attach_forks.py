"""For heatline attach: a program that, once DIRECTORY/go exists, forks a child every 20 ms until
DIRECTORY/finish; each child does a little work and ends through the interpreter's normal exit
(SystemExit: its atexit handlers run), the parent checks every child's exit status. argv:
DIRECTORY. Writes DIRECTORY/ready (its pid); prints whether every child exited with status 0."""

import os
import sys
import time

from _attachable import allow_tracing, mark, wait_for

DIRECTORY = sys.argv[1]

allow_tracing()
mark(DIRECTORY, "ready", str(os.getpid()))
wait_for(DIRECTORY, "go")
statuses = []
while not os.path.exists(os.path.join(DIRECTORY, "finish")):
    child = os.fork()
    if child == 0:
        sum(range(10000))
        raise SystemExit(0)
    statuses.append(os.waitpid(child, 0)[1])
    time.sleep(0.02)
print("children all exited 0:", bool(statuses) and all(s == 0 for s in statuses))
