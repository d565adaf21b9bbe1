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


def sleep_on_it():
    with table:
        with changed:
            threading.Thread(target=notify, name="notifier", daemon=True).start()
            changed.wait()  # sleeper waits here


def notify():
    with open(sys.argv[1] + ".tmp", "w") as ready:
        ready.write(f"{os.getpid()} {id(table)}\n")
    os.replace(sys.argv[1] + ".tmp", sys.argv[1])
    with table:  # notifier waits here
        with changed:
            changed.notify()


sleeper = threading.Thread(target=sleep_on_it, name="sleeper")
sleeper.start()
sleeper.join()  # main waits here
