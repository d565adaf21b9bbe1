"""A Dask client under heatline.dask.profile_workers (tests/integration/test_dask_workers.py).

argv: SCHEDULER_FILE OUT_JSON STATE_DIR. The workers named "a" and "b" run two kinds of
tasks (prefixes spin_a and spin_b), each returning what it measured on its own thread's clocks
(_truth.Span: its time on a CPU by the task clock, steal time included, as heatline sees it;
and time.thread_time's, which a VM's steal time leaves out); the worker named "doomed" runs
none. The workers import _truth by reference (PYTHONPATH: this directory). Once the block is
entered, STATE_DIR/entered tells the test to start the worker named "late", which joins
during the block and runs tasks too. After the tasks, STATE_DIR/ready.json holds the measured
times and the workers' addresses; the test kills the doomed worker, and the block ends once
the scheduler has seen it go.
"""

import json
import os
import sys
import time

from distributed import Client

import _truth
import dask_tasks
import heatline

N_A, N_B, N_ALLOCATE = 6, 4, 3
BLOCKS, BLOCK_BYTES = 200, 256 * 1024


def spin_a(n):
    with _truth.Span() as span:
        start = time.thread_time()
        total = 0
        for i in range(n):
            total += i * i % 7
        thread_s = time.thread_time() - start
    return {"on_cpu_s": span.on_cpu_s, "thread_s": thread_s, "wall_s": span.wall_s}


def spin_b(n):
    with _truth.Span() as span:
        start = time.thread_time()
        words = []
        for i in range(n):
            words.append(str(i))
            if len(words) > 1000:
                words.clear()
        thread_s = time.thread_time() - start
    return {"on_cpu_s": span.on_cpu_s, "thread_s": thread_s, "wall_s": span.wall_s}


def _poll(condition, what, limit_s=600.0):
    deadline = time.monotonic() + limit_s  # a hang guard only
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"dask_workers_client: timed out waiting for {what}")
        time.sleep(0.2)


def _names(client):
    return {w["name"] for w in client.scheduler_info()["workers"].values()}


def main():
    scheduler_file, out, state = sys.argv[1:4]
    client = Client(scheduler_file=scheduler_file, timeout="300s")
    _poll(lambda: {"a", "b", "doomed", "broken"} <= _names(client), "the workers")
    by_name = {w["name"]: address for address, w in client.scheduler_info()["workers"].items()}
    with heatline.dask.profile_workers(out):
        open(os.path.join(state, "entered"), "w").close()
        _poll(lambda: "late" in _names(client), "the late worker")
        by_name = {w["name"]: address
                   for address, w in client.scheduler_info()["workers"].items()}
        # its heatline has started once it said so (the plugin's event), before any task
        _poll(lambda: any(message.get("address") == by_name["late"]
                          for _, message in client.get_events("heatline")),
              "heatline in the late worker")
        pinned = [by_name["a"], by_name["b"], by_name["late"]]
        futures_a = client.map(spin_a, [3_000_000 + i for i in range(N_A)], workers=pinned)
        futures_b = client.map(spin_b, [1_800_000 + i for i in range(N_B)], workers=pinned)
        futures_allocate = client.map(dask_tasks.allocate, [BLOCKS] * N_ALLOCATE,
                                      [BLOCK_BYTES] * N_ALLOCATE, pure=False, workers=pinned)
        times_a = client.gather(futures_a)
        times_b = client.gather(futures_b)
        allocated = client.gather(futures_allocate)
        where = client.who_has([*futures_a, *futures_b, *futures_allocate])
        ready = {"spin_a": times_a, "spin_b": times_b, "allocate": allocated,
                 "doomed": by_name["doomed"],
                 "workers": sorted({a for addresses in where.values() for a in addresses}),
                 "addresses": by_name}
        with open(os.path.join(state, "ready.json.tmp"), "w") as f:
            json.dump(ready, f)
        os.rename(os.path.join(state, "ready.json.tmp"), os.path.join(state, "ready.json"))
        _poll(lambda: by_name["doomed"] not in client.scheduler_info()["workers"],
              "the doomed worker to leave")
    client.close()


if __name__ == "__main__":
    main()
