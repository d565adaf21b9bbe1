"""heatline dump's hang with no lock cycle (tests/integration/test_dump_deadlock.py): the thread
named sleeper holds `table` (a with block) and waits in a Condition's wait for a notify that the
thread named notifier would send once it has `table`, for which it waits; the main thread joins
the sleeper. Every thread waits and none can go on.

argv[1]: a file written once the sleeper waits for its notify; argv[2] as in
dump_lock_cycle.py.
"""

import ctypes
import os
import sys
import threading

libc = ctypes.CDLL(None, use_errno=True)
if sys.argv[2:] == ["ptracer"]:
    PR_SET_PTRACER, PR_SET_PTRACER_ANY = 0x59616D61, ctypes.c_ulong(-1).value
    libc.prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0)

table = threading.Lock()
changed = threading.Condition()


def name_this_thread(name):
    libc.prctl(15, name.encode(), 0, 0, 0)  # PR_SET_NAME: the kernel's name, /proc's comm


def sleep_on_it():
    name_this_thread("sleeper")
    with table:
        with changed:
            threading.Thread(target=notify, daemon=True).start()
            changed.wait()  # sleeper waits here


def notify():
    name_this_thread("notifier")
    with open(sys.argv[1] + ".tmp", "w") as ready:
        ready.write(f"{os.getpid()} {id(table)}\n")
    os.replace(sys.argv[1] + ".tmp", sys.argv[1])
    with table:  # notifier waits here
        with changed:
            changed.notify()


sleeper = threading.Thread(target=sleep_on_it)
sleeper.start()
sleeper.join()  # main waits here
