"""Ground truth for torch DataLoader workers: a map-style Dataset whose __getitem__ runs a known
pure-Python transform and measures its own busy time (CPU time plus time runnable but waiting
for a CPU, as _truth.py measures it), read by DataLoader(num_workers=2) with the start method
from argv[1] ("fork", Linux's default, or "spawn").

Prints what the workers produced, deterministically (the same bytes under python and under
heatline): per item its index, the transform's result, the worker that made it and whether
that worker saw the parent's environment and sys.argv; then the workers' exit codes. With
"truth" as argv[2] it also prints one JSON line: the workers' summed busy time in the
transform, this process's pid, and its own figures over the loop that waits for the batches
(wall time, busy time, times it blocked, times it entered the loop's header: _truth.Span).
"""

import json
import os
import sys

import torch
from torch.utils.data import DataLoader, Dataset, get_worker_info

from _truth import Span, busy_s

ITEMS = 16
ITERATIONS = 2_000_000


def transform(n):
    total = 0
    for i in range(n):
        total += i % 7
    return total


class Items(Dataset):
    def __init__(self):
        self.environ = dict(os.environ)
        self.argv = list(sys.argv)

    def __len__(self):
        return ITEMS

    def __getitem__(self, index):
        result = []
        busy = busy_s(lambda: result.append(transform(ITERATIONS + index)))
        same = dict(os.environ) == self.environ and sys.argv == self.argv
        return {"index": index, "value": result[0], "worker": get_worker_info().id,
                "same": same, "busy": busy}


if __name__ == "__main__":
    torch.set_num_threads(1)
    # At the end the DataLoader waits MP_STATUS_CHECK_INTERVAL (5 s) for each worker to exit,
    # then kills it with SIGTERM (exit code -15): a time limit inside the target, which a worker
    # importing torch met on a loaded machine (its exit took 1.5 s under python, 2.8 s under
    # heatline at load 8). The comparison with python is of what the program does, so neither
    # run is given that limit.
    import torch.utils.data._utils as loader_utils

    loader_utils.MP_STATUS_CHECK_INTERVAL = 600.0
    loader = DataLoader(Items(), batch_size=2, num_workers=2, multiprocessing_context=sys.argv[1])
    batches = iter(loader)
    items, busy, visits = [], 0.0, 1
    with Span() as parent:
        for batch in batches:  # the parent waits here
            visits += 1
            busy += float(batch["busy"].sum())
            items += zip(*(batch[key].tolist() for key in ("index", "value", "worker", "same")))
    print(json.dumps(items))
    print(sorted(worker.exitcode for worker in batches._workers))
    if sys.argv[2:] == ["truth"]:
        print(json.dumps({"busy_s": busy, "pid": os.getpid(),
                          "parent": {"wall_s": parent.wall_s, "busy_s": parent.busy_s,
                                     "blocks": parent.blocks, "visits": visits}}))
