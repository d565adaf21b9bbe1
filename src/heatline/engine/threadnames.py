"""The names of the program's threads, read in the program while they live.

A thread's name is the one ``threading`` gave it (``Thread.name``: "loader"); a thread
``threading`` does not know (started by C code or ``_thread.start_new_thread``; a
``_DummyThread``'s made-up "Dummy-1" is not a name the program gave) has the kernel's name
for it instead (``/proc/self/task/TID/comm``). A thread can end, and its ``Thread`` object go,
long before the profile is built, so the names are read whenever the sampler has seen new
threads (the engine asks the main thread for the call: newthreads.h) and again at each
snapshot; a renamed thread keeps the last name read.

Nothing is imported here that the program has not: ``threading`` is read from
``sys.modules`` (a program that never imported it has no ``Thread`` names). Its thread table is
read without its lock: the main thread may hold that lock at the moment the call runs (it
runs between two bytecodes of whatever the main thread was doing), and the lock does not nest.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def _thread_objects(threading: Any) -> list[Any]:
    """The ``Thread`` objects that still exist: ended ones the program keeps (``_dangling``,
    every Thread not yet collected) first, then the running ones (``_active``), so that a
    running thread's name wins over an ended one whose kernel id it reuses."""
    found: list[Any] = []
    for table, read in ((getattr(threading, "_dangling", None), list),
                        (getattr(threading, "_active", None), lambda d: list(d.values()))):
        if table is None:
            continue
        for _ in range(3):  # another thread may change the table while it is copied
            try:
                found += read(table)
                break
            except (RuntimeError, AttributeError, TypeError):
                continue
    return found


class ThreadNames:
    """Native thread id -> name, as read so far (``names()``)."""

    def __init__(self) -> None:
        self._python: dict[int, str] = {}
        self._comm: dict[int, str] = {}

    def read(self, comm_again: bool = False) -> None:
        """Read the names of the threads alive now (``comm_again``: the kernel's names of
        those already read too, which a thread may have changed). Raises nothing the program
        could see but what its own signal handlers raise meanwhile."""
        try:
            self._read(comm_again)
        except Exception:  # noqa: BLE001 -- a name missed, never an error in the program
            pass

    def _read(self, comm_again: bool) -> None:
        threading = sys.modules.get("threading")
        if threading is not None:
            dummy = getattr(threading, "_DummyThread", None)
            for thread in _thread_objects(threading):
                try:
                    tid = thread.native_id
                    name = thread.name
                except Exception:  # noqa: BLE001 -- the program's own subclass may fail
                    continue
                if (isinstance(tid, int) and isinstance(name, str)
                        and not (dummy is not None and isinstance(thread, dummy))):
                    self._python[tid] = name
        try:
            tasks = os.listdir("/proc/self/task")
        except OSError:
            return
        for task in tasks:
            try:
                tid = int(task)
            except ValueError:
                continue
            if tid in self._python or (tid in self._comm and not comm_again):
                continue
            try:
                with open(f"/proc/self/task/{tid}/comm", "rb") as f:
                    comm = f.read().rstrip(b"\n").decode("utf-8", "replace")
            except OSError:
                continue  # ended meanwhile
            if comm:
                self._comm[tid] = comm

    def names(self) -> list[list[Any]]:
        """[[native_id, name], ...], the snapshot's ``thread_names``."""
        merged = {**self._comm, **self._python}
        return [[tid, name] for tid, name in sorted(merged.items())]
