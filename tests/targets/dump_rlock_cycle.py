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


def name_this_thread(name):
    libc.prctl(15, name.encode(), 0, 0, 0)  # PR_SET_NAME: the kernel's name, /proc's comm


def take_journal():
    journal.acquire()
    journal.acquire()  # twice: the RLock counts


def load():
    name_this_thread("loader")
    take_journal()
    both_hold_one.wait()
    with ready:  # loader waits here
        pass


def write():
    name_this_thread("writer")
    with ready:
        both_hold_one.wait()
        journal.acquire()  # writer waits here


for target in (load, write):
    threading.Thread(target=target, daemon=True).start()
both_hold_one.wait()
with open(sys.argv[1] + ".tmp", "w") as file:
    file.write(f"{os.getpid()} {id(journal)} {id(ready._lock)}\n")
os.replace(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(600)
