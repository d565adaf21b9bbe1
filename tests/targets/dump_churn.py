"""heatline dump's moving target (tests/integration/test_dump.py): threads whose stacks grow and
shrink all the time (recursion to a varying depth) and threads that start and end all the time,
so a reader that does not stop the process meets frames and thread states freed under it.

argv[1]: a file written once it churns; argv[2] == "ptracer" as in dump_stacks.py.
"""

import ctypes
import os
import sys
import threading

if sys.argv[2:] == ["ptracer"]:
    PR_SET_PTRACER, PR_SET_PTRACER_ANY = 0x59616D61, ctypes.c_ulong(-1).value
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0)


def descend(depth):
    if depth > 0:
        return descend(depth - 1) + 1
    return 0


def churn(seed):
    n = seed
    while True:
        n = (n * 1103515245 + 12345) % 2**31
        descend(n % 60)


def short_lived():
    descend(20)


def main():
    for seed in range(3):
        threading.Thread(target=churn, args=(seed,), daemon=True).start()
    with open(sys.argv[1] + ".tmp", "w") as ready:
        ready.write(f"{os.getpid()}\n")
    os.replace(sys.argv[1] + ".tmp", sys.argv[1])
    while True:
        thread = threading.Thread(target=short_lived)
        thread.start()
        thread.join()


main()
