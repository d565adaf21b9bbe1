"""A single-threaded program that allocates and forks: Python 3.12+ warns on stderr when a
process with more than one OS thread forks, so a profiler's own threads must not show."""

import os

import numpy as np

keep = np.ones(100_000)
pid = os.fork()
if pid == 0:
    print("child", int(np.ones(1_000).sum()), flush=True)
    os._exit(0)
os.waitpid(pid, 0)
print("parent", int(keep.sum()), flush=True)
