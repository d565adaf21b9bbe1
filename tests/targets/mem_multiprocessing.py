"""multiprocessing with the start method in argv[1] (fork, spawn, forkserver): a pool whose
workers allocate Python objects and numpy arrays, and a process sending a result back."""

import multiprocessing
import sys

import numpy as np


def work(n):
    data = np.arange(n, dtype=np.float64)
    items = data.tolist()
    return float(data.sum()) + len(items)


def produce(queue):
    blocks = [np.ones(100_000) for _ in range(5)]
    queue.put(sum(float(b.sum()) for b in blocks))


if __name__ == "__main__":
    method = sys.argv[1]
    context = multiprocessing.get_context(method)
    keep = np.ones(1_000_000)  # some memory in the parent while children start
    with context.Pool(2) as pool:
        print(method, pool.map(work, [10_000 * (i + 1) for i in range(8)]), flush=True)
    queue = context.Queue()
    process = context.Process(target=produce, args=(queue,))
    process.start()
    print("from child:", queue.get(), flush=True)
    process.join()
    print("exitcode:", process.exitcode, int(keep.sum()))
