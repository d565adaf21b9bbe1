"""A single-threaded program that allocates and forks: Python 3.12+ warns on stderr when a
process with more than one OS thread forks, so a profiler's own threads must not show. 3.13+
counts the threads after the after_in_parent hooks, logging's included."""

import logging  # noqa: F401 -- registers Python at-fork hooks, which run after heatline's
import os

import numpy as np

keep = np.ones(100_000)
pid = os.fork()
if pid == 0:
    print("child", int(np.ones(1_000).sum()), flush=True)
    os._exit(0)
os.waitpid(pid, 0)
print("parent", int(keep.sum()), flush=True)
