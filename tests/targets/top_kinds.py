"""heatline top's target with a known split (tests/integration/test_top.py): the main thread
asleep in time.sleep (system time), a thread spinning in pure Python on one line (Python time),
and a thread hashing large buffers, a C call that releases the GIL (native time).

argv[1]: a file written once every thread is where it stays. With argv[2] == "ptracer", the
process first lets any process of its user read it (prctl PR_SET_PTRACER_ANY), which Yama's
ptrace_scope 1 otherwise refuses to a process that is not its parent (heatline top is not).
"""

import ctypes
import hashlib
import os
import sys
import threading
import time

if sys.argv[2:] == ["ptracer"]:
    PR_SET_PTRACER, PR_SET_PTRACER_ANY = 0x59616D61, ctypes.c_ulong(-1).value
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0)

started = threading.Barrier(3)


def spin_in_python():
    started.wait()
    n = 0
    while n >= 0: n += 1  # noqa: E701 -- one line, so the line of every reading is this one


def hash_in_c():
    data = b"x" * (64 << 20)
    started.wait()
    while True:
        hashlib.sha256(data).digest()  # ~0.1-0.3 s in C without the GIL


def sleep_in_system():
    time.sleep(600)


threading.Thread(target=spin_in_python, name="spinner", daemon=True).start()
threading.Thread(target=hash_in_c, name="hasher", daemon=True).start()
started.wait()
with open(sys.argv[1] + ".tmp", "w") as ready:
    ready.write(f"{os.getpid()}\n")
os.replace(sys.argv[1] + ".tmp", sys.argv[1])
sleep_in_system()
