"""The program's GIL switch interval while a thread of heatline's in it needs the GIL many times.

A thread waiting for the GIL asks its holder to let go only after a whole switch interval
(5 ms by default) in which the GIL never changed hands. A program thread that lets go of it
for a short system call (a stat, a poll) and takes it straight back is never asked, and wins
nearly every race for it. A thread of heatline's that takes the GIL back after each of its
own system calls (an import opens and reads files; building a profile reads sources and the
socket) then waits seconds, up to minutes: heatline attach's start and stop (the attacher
shortens the interval from outside, engine/attach.py) and a --pprof-server request
(serve.py) met it. With QUICK_SWITCH_US the wait is about that per system call, and the
program's threads switch that much more often for as long as heatline's thread works.

The program's own interval is put back afterwards, unless the program set one of its own
meanwhile (the interval is then no longer the quick one)."""

from __future__ import annotations

import sys
from typing import Any

QUICK_SWITCH_US = 100
QUICK_SWITCH_S = QUICK_SWITCH_US * 1e-6  # as sys.getswitchinterval() gives it back


def put_back(previous_s: float) -> None:
    """``previous_s`` the program's switch interval again, if it still is the quick one."""
    if abs(sys.getswitchinterval() - QUICK_SWITCH_S) < 1e-9:
        sys.setswitchinterval(previous_s)


class quick:
    """``with quick():`` the quick interval inside, the one before put back after."""

    def __enter__(self) -> None:
        self.previous = sys.getswitchinterval()
        sys.setswitchinterval(QUICK_SWITCH_S)

    def __exit__(self, *exc_info: Any) -> None:
        put_back(self.previous)
