"""heatline dump's deadlock of two threading.Lock (tests/integration/test_dump_deadlock.py): the
thread named loader holds `jobs` (a with block) and waits for `journal`, the thread named writer
holds `journal` and waits for `jobs`; the main thread waits for loader to end. A _thread.lock
records no owner: heatline dump finds each holder by the with block in its frames.

argv[1]: a file written once both threads hold their first lock (they block a moment later).
argv[2] == "ptracer": let any process of this user read this one (Yama's ptrace_scope 1).
"""

import ctypes
import os
import sys
import threading

libc = ctypes.CDLL(None, use_errno=True)
if sys.argv[2:] == ["ptracer"]:
    PR_SET_PTRACER, PR_SET_PTRACER_ANY = 0x59616D61, ctypes.c_ulong(-1).value
    libc.prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0)

jobs = threading.Lock()
journal = threading.Lock()
both_hold_one = threading.Barrier(3)


def load():
    with jobs:
        both_hold_one.wait()
        with journal:  # loader waits here
            pass


def write():
    with journal:
        both_hold_one.wait()
        with jobs:  # writer waits here
            pass


loader = threading.Thread(target=load, name="loader")
writer = threading.Thread(target=write, name="writer", daemon=True)
loader.start()
writer.start()
both_hold_one.wait()
with open(sys.argv[1] + ".tmp", "w") as ready:
    ready.write(f"{os.getpid()} {id(jobs)} {id(journal)}\n")
os.replace(sys.argv[1] + ".tmp", sys.argv[1])
loader.join()
