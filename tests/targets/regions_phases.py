"""Regions without torch: heatline.region nested, as a decorator, on a second thread, left open
by a suspended generator, exited out of order, and one that allocates a known amount. Each
region's wall time as the program measures it, the bytes allocated, and the run's wall time are
written (JSON) to argv[1]: the truth. Imports no torch."""

import json
import sys
import threading
import time

import heatline

clock = time.perf_counter
TRUTH = {"wall": {}}
ALLOC_BYTES = 8 << 20
KEPT = []


def spin(seconds):
    end = clock() + seconds
    total = 0
    while clock() < end:
        total += 1
    return total


def add(path, seconds):
    TRUTH["wall"][path] = TRUTH["wall"].get(path, 0.0) + seconds


@heatline.region("decorated")
def decorated():
    spin(0.1)


def held_open():
    """Enters a region and is suspended inside it: the region stays open until it is closed."""
    with heatline.region("generator"):
        yield 1
        yield 2


def main():
    started = clock()
    for _ in range(3):
        t0 = clock()
        with heatline.region("step"):
            t1 = clock()
            with heatline.region("forward"):
                spin(0.15)
            t2 = clock()
            with heatline.region("backward"):
                spin(0.1)
                time.sleep(0.05)
            add("step/backward", clock() - t2)
            add("step/forward", t2 - t1)
        add("step", clock() - t0)
    for _ in range(2):
        t0 = clock()
        decorated()
        add("decorated", clock() - t0)

    # a second thread's region: its own thread's entry
    def worker():
        t0 = clock()
        with heatline.region("worker"):
            spin(0.1)
        add("worker", clock() - t0)

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()

    # Unbalanced: a generator suspended in its region while "after" is entered, closed inside
    # it: the generator's entry closes there; "after" stays open, its path "generator/after"
    # until then and "after" from then on.
    t0 = clock()
    gen = held_open()
    next(gen)
    t_after = clock()
    with heatline.region("after"):
        spin(0.1)
        t1 = clock()
        gen.close()
        add("generator", t1 - t0)
        add("generator/after", t1 - t_after)
        t_after = clock()
        spin(0.05)
    add("after", clock() - t_after)
    # An exit out of order: the outer entry closed while the inner one is open.
    outer, inner = heatline.region("outer"), heatline.region("inner")
    t0 = clock()
    outer.__enter__()
    inner.__enter__()
    spin(0.05)
    outer.__exit__(None, None, None)
    t1 = clock()
    spin(0.05)
    inner.__exit__(None, None, None)
    add("outer", t1 - t0)
    add("outer/inner", t1 - t0)
    add("inner", clock() - t1)
    # Memory: three 8 MiB buffers allocated in a region of their own, kept to the end.
    t0 = clock()
    with heatline.region("alloc"):
        for _ in range(3):
            KEPT.append(bytearray(ALLOC_BYTES))
    add("alloc", clock() - t0)
    TRUTH["alloc_bytes"] = {"alloc": 3 * ALLOC_BYTES}
    TRUTH["run_s"] = clock() - started
    TRUTH["torch_imported"] = "torch" in sys.modules


main()
with open(sys.argv[1], "w") as f:
    json.dump(TRUTH, f)
