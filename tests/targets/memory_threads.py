"""Memory ground truth with threads allocating at the same time (see _memtruth.py).

WORKERS worker threads and the main thread run ROUNDS rounds in lockstep. In each round every
worker calloc's a block with np.zeros (numpy calls calloc with the GIL released) and makes a
list of bytes objects (holding the GIL), the first worker also leaks an array, and the main
thread makes a list of floats. Then all of them wait at a barrier holding what they made,
drop it, and wait at a second barrier before the next round. Nothing is freed before the first
barrier and nothing new is allocated before the second, so the peak is everything held at once
in the last round (when the leak is largest); its exact value comes from a tracemalloc run
(HEATLINE_TRUTH_MODE=tracemalloc). Which thread's line completes it is a race: the peak line is
one of the lines tagged transient or leak.

Per line the truths are by construction, with the same constructions as memory.py (where the
line tracer checks them against tracemalloc): np.zeros(n) and np.ones(n) are one allocation of
8n bytes (native); RECORDS[a:b].tolist() of S400 records is a list of b - a bytes objects of
sys.getsizeof(b"") + 400 bytes each, copying 400 bytes per record with memcpy;
SOURCE[:n].tolist() is a list of n floats of sys.getsizeof(1.0) bytes, with no copy. All of
them are summed over threads and rounds. A concurrent line tracer would charge one thread's
allocations to another's line, so this target runs without one (trace_lines=False).
"""

import _memtruth  # noqa: I001 (first: in tracemalloc mode, it starts tracemalloc)

import sys
import threading

import numpy as np

TRUTH = _memtruth.Truth(__file__, trace_lines=False)
SCALE = TRUTH.scale


def scaled(count):
    return max(1, int(count * SCALE))


WORKERS = 4
ROUNDS = 24
RECORD = 400
RECORDS_N = scaled(5_000)  # records: 2 MB, also the bytes objects per worker and round
SOURCE_N = scaled(200_000)  # floats: 1.6 MB, also the Python floats per main round
GRID_N = scaled(4_000_000)  # floats calloc'ed per worker and round: 32 MB
LEAK_N = scaled(250_000)  # floats leaked per round by the first worker: 2 MB

FLOAT = sys.getsizeof(1.0)
BYTES_HEADER = sys.getsizeof(b"")
EMPTY_LIST = sys.getsizeof([])
POINTER = 8


def list_of(count, item_bytes):
    return EMPTY_LIST + count * (POINTER + item_bytes)


LEAKED = []
HOLD = threading.Barrier(WORKERS + 1)
FREED = threading.Barrier(WORKERS + 1)


@TRUTH.phase
def setup():
    global RECORDS, SOURCE
    RECORDS = np.ones(RECORDS_N * RECORD, np.uint8).view(f"S{RECORD}")  # mem: records (kept_once)
    TRUTH.line("records", native=RECORDS_N * RECORD)
    SOURCE = np.ones(SOURCE_N)  # mem: source (kept_once)
    TRUTH.line("source", native=8 * SOURCE_N)


@TRUTH.phase
def worker(index):
    for _ in range(ROUNDS):
        grid = np.zeros(GRID_N)  # mem: worker_grid (transient)
        TRUTH.line("worker_grid", native=8 * GRID_N)
        blobs = RECORDS.tolist()  # mem: worker_blobs (transient)
        TRUTH.line(
            "worker_blobs",
            python=list_of(RECORDS_N, BYTES_HEADER + RECORD),
            copy=RECORDS_N * RECORD,
        )
        if index == 0:
            LEAKED.append(np.ones(LEAK_N))  # mem: worker_leak (leak)
            TRUTH.line("worker_leak", native=8 * LEAK_N)
        HOLD.wait()
        del grid, blobs
        FREED.wait()


@TRUTH.phase
def main_rounds():
    for _ in range(ROUNDS):
        floats = SOURCE.tolist()  # mem: main_floats (transient)
        TRUTH.line("main_floats", python=list_of(SOURCE_N, FLOAT))
        HOLD.wait()
        # Everything of this round is alive now (the workers' leak too: it comes before HOLD).
        TRUTH.note_peak(
            list_of(SOURCE_N, FLOAT)
            + WORKERS * (8 * GRID_N + list_of(RECORDS_N, BYTES_HEADER + RECORD))
        )
        TRUTH.line_peak("worker_grid", WORKERS * 8 * GRID_N)
        TRUTH.line_peak("worker_blobs", WORKERS * list_of(RECORDS_N, BYTES_HEADER + RECORD))
        del floats
        FREED.wait()


def main():
    setup()
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(WORKERS)]
    for thread in threads:
        thread.start()
    main_rounds()
    for thread in threads:
        thread.join()


if __name__ == "__main__":
    main()
