"""``heatline dump``'s deadlock finding: which threads wait for which lock, who holds it, and
whether the waits close a cycle (docs/design-live.md, "Deadlocks").

The dump brings, per thread, the lock objects its frames hold (_native/locks.c: a local, the
value stack, or a `with` block's bound ``__exit__``) and, from /proc, the futex word the thread
sleeps on. A thread waits for a lock when it sleeps in futex on the word of a lock its
innermost frame holds (a blocked ``acquire`` sleeps on its PyThread_type_lock, whose address the
lock object keeps): exact, never guessed from the line. Who holds it: an ``RLock`` records its
owner's thread ident (``threading.Condition`` wraps one); a ``_thread.lock`` records nobody, so
the holder is inferred from the other threads' frames, a ``with`` block on the lock first, then
the lock on a value stack, then in a local; several threads tied, or none, leave the holder
unnamed. Runs once per dump, in Python.
"""

from __future__ import annotations

import os

from heatline.engine.records import dataclass

TYPE_CHECKING = False
if TYPE_CHECKING:  # heatline dump's start imports no typing (engine/records.py)
    from typing import Any

    # engine/dump.py's Thread and Frame, which are not imported: dump.py imports this module.
    Thread = Any
    Frame = Any

# How strongly a frame's slot shows that its thread holds the lock: a `with` block's bound
# __exit__ stays on the value stack for the whole block; the lock itself on a value stack or in
# a local may be there for another reason (about to be acquired, or kept for later).
_EVIDENCE = {"exit": 3, "stack": 2, "local": 1}


@dataclass
class Wait:
    """One thread waiting for a lock."""

    thread: Thread
    lock: int  # the lock object's address in the process (its id())
    lock_type: str  # "_thread.lock" or "_thread.RLock"
    holder: Thread | None  # None: heatline cannot name it
    held_by: str | None  # how the holder is known: "owner" (the RLock records it), "with",
    # "stack", "local" (inferred from the holder's frames), None
    held_at: Frame | None  # the holder's frame that shows it (inferred holders)
    waits_for: str = "lock"  # "lock": a holder's release; "notify": in threading's
    # Condition.wait (on a lock of its own), another thread's notify; "join": in threading's
    # Thread.join, a thread's end

    @property
    def at(self) -> Frame:
        """Where it waits: its innermost frame outside threading.py (a Condition's or a
        Semaphore's method waits for the program's line that called it)."""
        return next((f for f in self.thread.frames if os.path.basename(f.file) != "threading.py"),
                    self.thread.frames[0])


@dataclass
class Deadlock:
    """Threads that wait for each other's locks (cycle), or, when some holder cannot be named,
    every Python thread of the process waiting for a lock (no thread left to release one)."""

    cycle: bool
    waits: list[Wait]  # a cycle: each waits for a lock the next one holds, the last the first's
    behind: list[Wait]  # other threads waiting for a lock held by one of the cycle's


def thread_name(thread: Thread, process_name: str) -> str:
    """How the deadlock line names a thread: the name threading gave it, else the kernel's
    (unless it is the process's own), else "main thread" or "thread TID"."""
    if thread.python_name:
        return thread.python_name
    if thread.name and thread.name != process_name:
        return thread.name
    if thread.main:
        return "main thread"
    return f"thread {thread.native_id or '?'}"


def _asleep_in_futex(thread: Thread) -> bool:
    return bool(thread.python and thread.frames and not thread.holds_gil and thread.complete
                and thread.kernel_state in ("S", "D") and thread.futex)


def _in_threading(thread: Thread) -> str | None:
    """"join" or "notify" when the thread's innermost frames, in threading.py, are in a
    Thread.join or a Condition.wait; else None."""
    for frame in thread.frames:
        if os.path.basename(frame.file) != "threading.py":
            return None
        if frame.name == "join":
            return "join"
        if frame.qualname == "Condition.wait" or (frame.name == "wait" and frame is
                                                  thread.frames[0]):
            return "notify"
    return None


def _waited_lock(thread: Thread, by_sem: dict[int, dict]) -> dict | None:
    """The lock (a locks.c ref) thread sleeps on in futex, or None when it waits on no lock."""
    if not _asleep_in_futex(thread):
        return None
    for ref in thread.locks:
        if ref["frame"] == 0 and ref["sem"] == thread.futex:
            return ref
    return by_sem.get(thread.futex)


def _holder(ref: dict, waiter: Thread, threads: list[Thread]) -> tuple:
    """(holder, held_by, held_at) of the lock ref waiter waits for."""
    if ref["kind"] == "_thread.RLock":
        owner = next((t for t in threads if t.thread_id == ref["owner"]), None)
        if ref["count"] > 0 and owner is not None and owner is not waiter:
            return owner, "owner", None
        return None, None, None
    best: dict[int, tuple[int, dict]] = {}
    for thread in threads:
        if thread is waiter:
            continue
        for held in thread.locks:
            # The innermost frame's value stack is read to co_stacksize (its live top is not
            # saved during a C call): a lock there may be left from an expression done with.
            if held["lock"] != ref["lock"] or (held["place"] == "stack" and held["frame"] == 0):
                continue
            strength = _EVIDENCE.get(held["place"], 0)
            if strength > best.get(id(thread), (0, None))[0]:
                best[id(thread)] = (strength, held)
    if not best:
        return None, None, None
    top = max(strength for strength, _ in best.values())
    winners = [t for t in threads if id(t) in best and best[id(t)][0] == top]
    if len(winners) != 1:
        return None, None, None
    held = best[id(winners[0])][1]
    frames = winners[0].frames
    at = frames[held["frame"]] if held["frame"] < len(frames) else None
    return winners[0], {"exit": "with"}.get(held["place"], held["place"]), at


def find(threads: list[Thread]) -> Deadlock | None:
    """The deadlock among threads (a dump's), or None."""
    by_sem: dict[int, dict] = {}
    for thread in threads:
        for ref in thread.locks:
            by_sem.setdefault(ref["sem"], ref)
    waits: dict[int, Wait] = {}
    for thread in threads:
        ref = _waited_lock(thread, by_sem)
        if ref is None:
            if _asleep_in_futex(thread) and _in_threading(thread) == "join":
                # 3.13+: a join waits on the thread's handle, not on a lock
                waits[id(thread)] = Wait(thread, 0, "", None, None, None, "join")
            continue
        waits_for = _in_threading(thread)
        if waits_for == "join" or (waits_for == "notify" and ref["frame"] == 0
                                   and ref["place"] == "local"):
            waits[id(thread)] = Wait(thread, ref["lock"], ref["kind"], None, None, None,
                                     waits_for)
            continue
        holder, held_by, held_at = _holder(ref, thread, threads)
        waits[id(thread)] = Wait(thread, ref["lock"], ref["kind"], holder, held_by, held_at)
    for start in waits.values():
        path: list[Wait] = []
        seen: set[int] = set()
        wait: Wait | None = start
        while wait is not None and id(wait.thread) not in seen:
            seen.add(id(wait.thread))
            path.append(wait)
            wait = waits.get(id(wait.holder)) if wait.holder is not None else None
        if wait is not None:  # back at a thread of the path: the cycle starts there
            cycle = path[path.index(wait):]
            members = {id(w.thread) for w in cycle}
            behind = [w for w in waits.values()
                      if id(w.thread) not in members and w.holder is not None
                      and id(w.holder) in members]
            return Deadlock(cycle=True, waits=cycle, behind=behind)
    python = [t for t in threads if t.python]
    if len(waits) == len(python) and any(w.waits_for == "lock" for w in waits.values()):
        return Deadlock(cycle=False, waits=[waits[id(t)] for t in python], behind=[])
    return None


def _where(frame: Frame) -> str:
    return f"{os.path.basename(frame.file)}:{frame.line}"


def _lock(wait: Wait) -> str:
    kind = "RLock" if wait.lock_type == "_thread.RLock" else "lock"
    return f"{kind} {wait.lock:#x}"


def _held(wait: Wait, process_name: str) -> str:
    if wait.holder is None:
        return "held by a thread heatline cannot name"
    text = f"held by {thread_name(wait.holder, process_name)}"
    if wait.held_by != "owner" and wait.held_at is not None:
        how = {"with": "in a with block of", "stack": "on the value stack of",
               "local": "a local of"}[wait.held_by]
        text += f" ({how} {wait.held_at.qualname}(), at {_where(wait.held_at)})"
    return text


def _wait_text(wait: Wait, process_name: str, subject: str) -> str:
    if wait.waits_for == "notify":
        return f"{subject} waits at {_where(wait.at)} for a notify (in a Condition's wait)"
    if wait.waits_for == "join":
        return f"{subject} waits at {_where(wait.at)} for a thread to end (in a join)"
    return f"{subject} waits at {_where(wait.at)} for {_lock(wait)} {_held(wait, process_name)}"


def text(deadlock: Deadlock, process_name: str) -> str:
    """One line: "deadlock: loader waits at jobs.py:41 for lock 0x... held by writer (its with at
    jobs.py:55), which waits at jobs.py:57 for lock 0x... held by loader (...)"."""
    def name(wait: Wait) -> str:
        return thread_name(wait.thread, process_name)

    if not deadlock.cycle:
        return "deadlock: every thread waits, none can go on: " + "; ".join(
            _wait_text(w, process_name, name(w)) for w in deadlock.waits)
    line = "deadlock: " + ", ".join(
        _wait_text(w, process_name, name(w) if i == 0 else "which")
        for i, w in enumerate(deadlock.waits))
    if deadlock.behind:
        line += "; behind them: " + "; ".join(
            _wait_text(w, process_name, name(w)) for w in deadlock.behind)
    return line
