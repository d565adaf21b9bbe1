"""heatline dump's target with known stacks (tests/integration/test_dump.py): the main thread
asleep in time.sleep inside two functions, a worker spinning in a loop that is all one line
inside two functions, and a thread blocked on a lock the main thread holds.

argv[1]: a file written once every thread is where its stack is known. With argv[2] == "ptracer",
the process first lets any process of its user trace it (prctl PR_SET_PTRACER_ANY), which Yama's
ptrace_scope 1 otherwise refuses to a process that is not its parent (heatline dump is not).
"""

import ctypes
import os
import sys
import threading
import time

if sys.argv[2:] == ["ptracer"]:
    PR_SET_PTRACER, PR_SET_PTRACER_ANY = 0x59616D61, ctypes.c_ulong(-1).value
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0)

spinning = threading.Event()


def spin():
    n = 0
    spinning.set()
    while n >= 0: n += 1  # noqa: E701 -- one line, so the line of every sample is this one


def worker():
    spin()


def blocked(lock):
    with lock:  # held by the main thread for ever
        pass


def wait_on_lock(lock):
    blocked(lock)


def sleep_deeply():
    time.sleep(600)


def main():
    lock = threading.Lock()
    lock.acquire()
    threading.Thread(target=worker, name="spinner", daemon=True).start()
    waiter = threading.Thread(target=wait_on_lock, args=(lock,), name="waiter", daemon=True)
    waiter.start()
    spinning.wait()
    # The waiter is blocked once its thread shows a futex wait; give it a moment either way.
    time.sleep(0.2)
    with open(sys.argv[1] + ".tmp", "w") as ready:
        ready.write(f"{os.getpid()} {threading.get_ident()} {waiter.ident}\n")
    os.replace(sys.argv[1] + ".tmp", sys.argv[1])
    sleep_deeply()


main()
