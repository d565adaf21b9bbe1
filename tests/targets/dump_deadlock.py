"""heatline dump's deadlocked target (tests/integration/test_dump.py): a thread holds the GIL
inside a C call that never returns (libc's pause() through ctypes.PyDLL, whose calls keep the
GIL, unlike CDLL's), so the main thread, back from a sleep, waits for the GIL for ever. Nothing
can run Python code in this process any more: only a reader from outside can show its stacks.

argv[1]: a file written just before the thread blocks. argv[2] == "ptracer": as in
dump_stacks.py, let any process of this user read it (Yama's ptrace_scope 1).
"""

import ctypes
import os
import sys
import threading
import time

if sys.argv[2:] == ["ptracer"]:
    PR_SET_PTRACER, PR_SET_PTRACER_ANY = 0x59616D61, ctypes.c_ulong(-1).value
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0)

libc_keeping_the_gil = ctypes.PyDLL(None)
looping = False


def hold_the_gil_for_ever():
    while not looping:  # the main thread in its loop first, where it will stay
        time.sleep(0.001)
    with open(sys.argv[1] + ".tmp", "w") as ready:
        ready.write(f"{os.getpid()}\n")
    os.replace(sys.argv[1] + ".tmp", sys.argv[1])
    libc_keeping_the_gil.pause()  # returns only on a signal with a handler: never


def stuck_in_c():
    hold_the_gil_for_ever()


def wait_for_ever():
    global looping
    while True:
        looping = True
        time.sleep(0.01)  # coming back from it needs the GIL


def main():
    threading.Thread(target=stuck_in_c, name="stuck", daemon=True).start()
    wait_for_ever()


main()
