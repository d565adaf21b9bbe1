"""The names of the program's threads, read in the program while they live.

A thread's name is the one ``threading`` gave it (``Thread.name``: "loader"); a thread
``threading`` does not know (started by C code or ``_thread.start_new_thread``; a
``_DummyThread``'s made-up "Dummy-1" is not a name the program gave) has the kernel's name
for it instead (``/proc/self/task/TID/comm``). A thread can end, and its ``Thread`` object go,
long before the profile is built, so the ``threading`` names are read whenever the sampler has
seen new threads (the engine asks the main thread for the call: newthreads.h), and all names
again at each snapshot and at the end; a renamed thread keeps the last name read. The engine
reads each thread's kernel name itself when it first sees the thread (its ``comm``).

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


def _starting(threading: Any) -> bool:
    """Whether a thread was started and has not set its kernel id yet (``threading`` keeps it
    in ``_limbo`` until its own first Python code runs)."""
    try:
        return bool(getattr(threading, "_limbo", None)) or any(
            getattr(thread, "native_id", 0) is None and thread.is_alive()
            for thread in list(getattr(threading, "_active", {}).values()))
    except Exception:  # noqa: BLE001
        return False


class ThreadNames:
    """Native thread id -> name, as read so far (``names()``)."""

    def __init__(self) -> None:
        self._python: dict[int, str] = {}
        self._comm: dict[int, str] = {}

    def read(self) -> bool:
        """Read the ``threading`` names of the threads whose ``Thread`` objects exist now: the
        engine's pending call (newthreads.h). True when a thread was still starting (started,
        its kernel id not known to ``threading`` yet): the engine then calls again after its
        next tick, since it may have seen that thread already. No I/O, no lock: nothing here
        lets another thread take the GIL but the interpreter's own switch interval. Raises
        nothing the program could see but what its own signal handlers raise meanwhile."""
        try:
            return self._read_python()
        except Exception:  # noqa: BLE001 -- a name missed, never an error in the program
            return False

    def read_all(self) -> None:
        """read(), and the kernel's names of the threads alive now (a thread can change its
        own: ``pthread_setname_np``); at the end, and for a snapshot."""
        self.read()
        try:
            self._read_comm()
        except Exception:  # noqa: BLE001
            pass

    def _read_python(self) -> bool:
        threading = sys.modules.get("threading")
        if threading is None:
            return False
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
        return _starting(threading)

    def _read_comm(self) -> None:
        try:
            tasks = os.listdir("/proc/self/task")
        except OSError:
            return
        for task in tasks:
            try:
                with open(f"/proc/self/task/{task}/comm", "rb") as f:
                    comm = f.read().rstrip(b"\n").decode("utf-8", "replace")
            except (OSError, ValueError):
                continue  # ended meanwhile
            if comm and task.isdigit():
                self._comm[int(task)] = comm

    def names(self) -> list[list[Any]]:
        """[[native_id, name], ...], the snapshot's ``thread_names``: threading's name, else
        the kernel's as last read here (the engine's own read, when it first saw the thread,
        is each thread's ``comm``)."""
        merged = {**self._comm, **self._python}
        return [[tid, name] for tid, name in sorted(merged.items())]
