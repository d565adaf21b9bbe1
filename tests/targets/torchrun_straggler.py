"""One rank of a data-parallel loop launched by torchrun on the CPU (gloo): each step every rank
does the same work, one rank (the straggler, argv[1]; -1: none) does extra work on a line of its
own, then all of them meet in an all_reduce, where the others wait for the straggler. Steps are
marked with heatline.step(), one mark before the loop and one after each step, so the profile has
exactly STEPS steps (argv[2]).

Prints one JSON line per rank: its rank, the launcher's variables as the rank saw them, the
steps it ran and the CPU time (its own thread's clock) its extra work and its shared work took
in all, for the test to hold the summary's figures against."""

import json
import os
import sys
import time

import torch
import torch.distributed as dist

import heatline

SHARED = 100_000  # iterations of everyone's work per step
EXTRA = 600_000  # iterations of the straggler's extra work per step


def main():
    straggler = int(sys.argv[1])
    steps = int(sys.argv[2])
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    tensor = torch.ones(256)
    dist.all_reduce(tensor)  # every rank connected before the first step
    extra_s = shared_s = 0.0
    heatline.step()
    for _ in range(steps):
        start = time.thread_time()
        sum(i % 7 for i in range(SHARED))  # SHARED WORK
        shared_s += time.thread_time() - start
        if rank == straggler:
            start = time.thread_time()
            sum(i % 5 for i in range(EXTRA))  # STRAGGLER WORK
            extra_s += time.thread_time() - start
        dist.all_reduce(tensor)  # ALL_REDUCE
        heatline.step()
    seen = {name: os.environ.get(name) for name in ("RANK", "LOCAL_RANK", "GROUP_RANK",
                                                     "WORLD_SIZE", "TORCHELASTIC_RESTART_COUNT")}
    line = json.dumps({"rank": rank, "pid": os.getpid(), "env": seen, "steps": steps,
                       "extra_cpu_s": extra_s, "shared_cpu_s": shared_s})
    # One write per line: the ranks share stdout (torchrun runs them unbuffered).
    os.write(1, (line + "\n").encode())
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
