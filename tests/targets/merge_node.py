"""One node of a job for `heatline merge`: CPU work in burn(), in this process and in
CHILDREN forked children (one after another); writes its truth to TRUTH: its pid, its
children's pids, and the wall-clock time (time.time()) of its first and last line.

    merge_node.py TRUTH SECONDS CHILDREN"""

import json
import multiprocessing
import os
import sys
import time

FIRST_LINE = time.time()


def burn(seconds):
    end = time.process_time() + seconds
    count = 0
    while time.process_time() < end:
        count += 1
    return count


def main():
    truth, seconds, children = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
    pids = []
    for _ in range(children):
        child = multiprocessing.get_context("fork").Process(target=burn, args=(seconds,))
        child.start()
        child.join()
        pids.append(child.pid)
    burn(seconds)
    with open(truth, "w") as file:
        json.dump({"pid": os.getpid(), "children": pids, "first_line": FIRST_LINE,
                   "last_line": time.time()}, file)


if __name__ == "__main__":
    main()
