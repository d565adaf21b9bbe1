"""Forks a child that exits through the normal interpreter shutdown (running atexit)."""

import os
import sys

child = os.fork()
if child == 0:
    print("child", flush=True)
    sys.exit(0)
os.waitpid(child, 0)
print("parent", flush=True)
