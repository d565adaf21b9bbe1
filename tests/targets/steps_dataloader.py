"""A training loop over a torch DataLoader with two fork workers, its steps marked by
heatline.step(), for a --steps window: the workers mark no steps of their own and follow the
loop's window. Each item is about ITEM_S of the worker's CPU time; each worker logs every item
it makes (its start and end on the wall clock, time.time, and its CPU time) to
DIRECTORY/worker-PID.jsonl. Each step sleeps BEFORE_S, takes a batch (a worker starts the next
item then: prefetch_factor 1) and sleeps AFTER_S: a worker's items run mid-step, away from the
step marks where the window opens and closes. Prints one JSON line: this process's pid.
argv: DIRECTORY."""

import json
import os
import sys
import time

import torch  # noqa: F401 -- the DataLoader's
from torch.utils.data import DataLoader, Dataset

import heatline

DIRECTORY = sys.argv[1]
STEPS = 10
ITEM_S = 0.1
BEFORE_S = 0.2
AFTER_S = 0.3


class Items(Dataset):
    def __len__(self):
        return STEPS + 2  # two prefetched at the start: each taken batch starts one more

    def __getitem__(self, index):
        start, cpu = time.time(), time.thread_time()
        total = 0
        while time.thread_time() - cpu < ITEM_S:
            total += 1
        line = {"start": start, "end": time.time(), "cpu": time.thread_time() - cpu}
        with open(os.path.join(DIRECTORY, f"worker-{os.getpid()}.jsonl"), "a") as log:
            log.write(json.dumps(line) + "\n")
        return index


if __name__ == "__main__":
    loader = DataLoader(Items(), batch_size=None, num_workers=2,
                        multiprocessing_context="fork", prefetch_factor=1)
    batches = iter(loader)
    heatline.step()
    for _ in range(STEPS):
        time.sleep(BEFORE_S)
        next(batches)
        time.sleep(AFTER_S)
        heatline.step()
    del batches  # the workers end
    print(json.dumps({"pid": os.getpid()}))
