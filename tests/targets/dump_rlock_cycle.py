"""heatline dump's deadlock of an RLock and a Condition (tests/integration/test_dump_deadlock.py):
the thread named loader holds the RLock `journal` (acquired by a call, no with block) and waits
to enter the Condition `ready` (whose lock is an RLock), the thread named writer holds `ready`
and waits for `journal`. An RLock records its owner, so heatline dump names both holders from
the locks themselves. The main thread sleeps.

argv[1]: a file written once both threads hold their first lock; argv[2] as in
dump_lock_cycle.py.
"""

import ctypes
import os
import sys
import threading
import time

libc = ctypes.CDLL(None, use_errno=True)
if sys.argv[2:] == ["ptracer"]:
    PR_SET_PTRACER, PR_SET_PTRACER_ANY = 0x59616D61, ctypes.c_ulong(-1).value
    libc.prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0)

journal = threading.RLock()
ready = threading.Condition()
both_hold_one = threading.Barrier(3)


def take_journal():
    journal.acquire()
    journal.acquire()  # twice: the RLock counts


def load():
    take_journal()
    both_hold_one.wait()
    with ready:  # loader waits here
        pass


def write():
    with ready:
        both_hold_one.wait()
        journal.acquire()  # writer waits here


for name, target in (("loader", load), ("writer", write)):
    threading.Thread(target=target, name=name, daemon=True).start()
both_hold_one.wait()
with open(sys.argv[1] + ".tmp", "w") as file:
    file.write(f"{os.getpid()} {id(journal)} {id(ready._lock)}\n")
os.replace(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(600)
