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


def _objects(table: Any, read: Any) -> list[Any]:
    """``read(table)``, again if another thread changed the table while it was copied."""
    for _ in range(3):
        try:
            return list(read(table)) if table is not None else []
        except (RuntimeError, AttributeError, TypeError):
            continue
    return []


class ThreadNames:
    """Native thread id -> name, as read so far (``names()``)."""

    def __init__(self) -> None:
        self._python: dict[int, str] = {}
        self._comm: dict[int, str] = {}
        # The program's threading module, as a read while it ran found it: heatline's own work
        # at the end runs with heatline's modules in sys.modules (run/isolation.py), where
        # threading is not the program's, or is missing.
        self._threading: Any = None

    def _module(self, *, running: bool) -> Any:
        module = sys.modules.get("threading")
        if running and module is not None:
            self._threading = module
        return self._threading or module

    def read(self) -> bool:
        """Read the ``threading`` names of the running threads (a thread renamed since the
        last read has its new name): the engine's pending call (newthreads.h). True when a
        thread was still starting (started, its kernel id not known to ``threading`` yet): the
        engine then calls again after its next tick, since it may have seen that thread
        already. No I/O, no lock (about 1 us a running thread): nothing here lets another
        thread take the GIL but the interpreter's own switch interval. Raises nothing the
        program could see but what its own signal handlers raise meanwhile."""
        try:
            threading = self._module(running=True)
            if threading is None:
                return False
            running = _objects(getattr(threading, "_active", None), dict.values)
            return self._read_python(threading, running)
        except Exception:  # noqa: BLE001 -- a name missed, never an error in the program
            return False

    def read_all(self) -> None:
        """Every name again: of every ``Thread`` object that still exists (renamed since, or
        ended and kept by the program: ``_dangling`` holds every Thread not yet collected),
        then the kernel's of the threads alive now (a thread can change its own,
        ``pthread_setname_np``). For a snapshot and at the end."""
        try:
            threading = self._module(running=False)
            if threading is not None:
                # The ended first: a running thread's name wins over an ended one's whose
                # kernel id it reuses.
                objects = _objects(getattr(threading, "_dangling", None), list)
                objects += _objects(getattr(threading, "_active", None), dict.values)
                self._read_python(threading, objects)
            self._read_comm()
        except Exception:  # noqa: BLE001
            pass

    def _read_python(self, threading: Any, threads: list[Any]) -> bool:
        """The names of these Thread objects; whether a thread was still starting
        (``threading`` keeps it in ``_limbo`` until it has set its kernel id and entered
        ``_active``)."""
        dummy = getattr(threading, "_DummyThread", None)
        known = self._python
        for thread in threads:
            # The attributes behind Thread.native_id and Thread.name, read directly (a third
            # of the time); the properties where a CPython keeps them elsewhere.
            try:
                attributes = vars(thread)
                tid, name = attributes.get("_native_id"), attributes.get("_name")
            except TypeError:  # no __dict__
                tid = name = None
            if tid is None or name is None:
                try:
                    tid, name = thread.native_id, thread.name
                except Exception:  # noqa: BLE001 -- the program's own subclass may fail
                    continue
            if (isinstance(tid, int) and isinstance(name, str) and known.get(tid) != name
                    and not (dummy is not None and isinstance(thread, dummy))):
                known[tid] = name
        return bool(getattr(threading, "_limbo", None))

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
