"""Threads and the GIL: with "contended" (argv[1]) six threads run a pure-Python loop at the
same time (a barrier starts them together), so each waits for the GIL while another holds it;
with "alone" one thread runs the loop while another only sleeps and the main thread waits in
join(), so nothing competes for the GIL."""

import sys
import threading
import time


def spin(n, start=None):
    if start is not None:
        start.wait()  # all together: none runs alone while the others are still starting
    total = 0
    for i in range(n):
        total += i % 3
    return total


def doze(rounds):
    for _ in range(rounds):
        time.sleep(0.05)


if __name__ == "__main__":
    if sys.argv[1] == "contended":
        start = threading.Barrier(6)
        threads = [threading.Thread(target=spin, args=(2_000_000, start)) for _ in range(6)]
    else:
        threads = [threading.Thread(target=spin, args=(3_000_000,)),
                   threading.Thread(target=doze, args=(10,))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print("done")
