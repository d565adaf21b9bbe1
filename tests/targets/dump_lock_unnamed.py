"""heatline dump's deadlock whose holders no lock records and no frame shows
(tests/integration/test_dump_deadlock.py): the thread named loader took `jobs` and the thread
named writer took `journal` by acquire() calls, each then waits for the other's; the main thread
waits for `jobs` too. A _thread.lock records no owner and no with block or local shows who took
it, so no cycle can be closed: heatline dump says every thread waits for a lock, and that it
cannot name the holders.

argv[1]: a file written once both threads hold their first lock; argv[2] as in
dump_lock_cycle.py.
"""

import ctypes
import os
import sys
import _thread
import threading

libc = ctypes.CDLL(None, use_errno=True)
if sys.argv[2:] == ["ptracer"]:
    PR_SET_PTRACER, PR_SET_PTRACER_ANY = 0x59616D61, ctypes.c_ulong(-1).value
    libc.prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0)

jobs = threading.Lock()
journal = threading.Lock()
both_hold_one = threading.Barrier(3)


def name_this_thread(name):
    libc.prctl(15, name.encode(), 0, 0, 0)  # PR_SET_NAME: the kernel's name, /proc's comm


def load():
    name_this_thread("loader")
    jobs.acquire()
    both_hold_one.wait()
    journal.acquire()  # loader waits here


def write():
    name_this_thread("writer")
    journal.acquire()
    both_hold_one.wait()
    jobs.acquire()  # writer waits here


# Started by _thread, so threading names them not: the deadlock line names them by the kernel's
# names they give themselves.
for target in (load, write):
    _thread.start_new_thread(target, ())
both_hold_one.wait()
with open(sys.argv[1] + ".tmp", "w") as ready:
    ready.write(f"{os.getpid()} {id(jobs)} {id(journal)}\n")
os.replace(sys.argv[1] + ".tmp", sys.argv[1])
jobs.acquire()  # main waits here
