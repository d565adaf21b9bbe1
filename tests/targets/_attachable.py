"""For heatline attach's targets: let any process of this user trace this one (Yama's ptrace_scope
1 otherwise allows only the parent, and heatline attach is not it), and the handshake files."""

import ctypes
import os
import sys
import time


def allow_tracing():
    if sys.platform.startswith("linux"):
        PR_SET_PTRACER, PR_SET_PTRACER_ANY = 0x59616D61, ctypes.c_ulong(-1).value
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0)


def mark(directory, name, text=""):
    """directory/name, written whole (renamed into place)."""
    path = os.path.join(directory, name)
    with open(path + ".tmp", "w") as file:
        file.write(text)
    os.replace(path + ".tmp", path)


def wait_for(directory, name, timeout_s=300.0):
    """Sleep until directory/name exists (a hang guard only: the test drives the timing)."""
    deadline = time.monotonic() + timeout_s
    while not os.path.exists(os.path.join(directory, name)):
        if time.monotonic() > deadline:
            raise SystemExit(f"{name} never came")
        time.sleep(0.01)
