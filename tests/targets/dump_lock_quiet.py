"""heatline dump's target where threads wait and nothing is deadlocked
(tests/integration/test_dump_deadlock.py): a consumer in queue.get (it waits on a lock inside a
Condition) for a producer asleep in time.sleep; a reader in a socket's recv; a thread waiting
for a lock held by a thread asleep inside a with block on it (a wait, not a cycle); the main
thread asleep.

argv[1]: a file written once every thread is started; argv[2] as in dump_lock_cycle.py.
"""

import ctypes
import os
import queue
import socket
import sys
import threading
import time

libc = ctypes.CDLL(None, use_errno=True)
if sys.argv[2:] == ["ptracer"]:
    PR_SET_PTRACER, PR_SET_PTRACER_ANY = 0x59616D61, ctypes.c_ulong(-1).value
    libc.prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0)

jobs = queue.Queue()
here, there = socket.socketpair()
table = threading.Lock()
table_taken = threading.Event()


def consume():
    jobs.get()  # consumer waits here


def produce():
    time.sleep(600)  # producer sleeps here
    jobs.put(1)


def read():
    here.recv(1)  # reader waits here


def keep_table():
    with table:
        table_taken.set()
        time.sleep(600)  # keeper sleeps here


def wait_for_table():
    table_taken.wait()
    with table:  # waiter waits here
        pass


for target in (consume, produce, read, keep_table, wait_for_table):
    threading.Thread(target=target, daemon=True).start()
with open(sys.argv[1] + ".tmp", "w") as file:
    file.write(f"{os.getpid()}\n")
os.replace(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(600)
