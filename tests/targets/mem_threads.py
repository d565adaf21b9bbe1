"""Many threads allocating at once and in turns (Python objects, numpy arrays, calloc with the
GIL released, a thread pool), some short-lived; prints a checksum of what they computed."""

import concurrent.futures
import threading

import numpy as np


def worker(index, results):
    arrays = [np.ones(1_000 * (k + 1)) for k in range(20)]
    blobs = [bytes(100 + k % 300) for k in range(5_000)]
    grid = np.zeros(2_000_000)  # calloc without the GIL
    grid[::1000] += index
    results[index] = int(sum(a.sum() for a in arrays)) + sum(map(len, blobs)) + int(grid.sum())


def main():
    results = {}
    for batch in range(4):
        threads = [
            threading.Thread(target=worker, args=(batch * 8 + i, results)) for i in range(8)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        sums = list(pool.map(lambda n: float(np.arange(n).sum()), range(1_000, 50_000, 1_000)))
    print(len(results), sum(results.values()), sum(sums))


if __name__ == "__main__":
    main()
