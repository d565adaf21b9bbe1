"""Queries over a profile dict (docs/profile-format.md) that several views need: the stacks
without heatline's own launcher frames, inclusive time and call edges computed from them, how
much stack time had frames elided, the functions that only call, a thread's display name, and
the function a line belongs to."""

from __future__ import annotations

import os
from collections import namedtuple

# typing only for type checkers: a run's path imports none (heatline/__init__.py).
TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: importing typing costs every run about 4 ms
    from collections.abc import Sequence
    from typing import Iterator
    from heatline.data.model import (
        FileRecord, LineRecord, ProcessRecord, Profile, StackFrame, ThreadRecord,
    )

# heatline's package directory (this file is in heatline/data/).
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# heatline's own launcher files, wherever the profile was recorded (another install, machine).
# Today's names and the names they had before the package was laid out by role.
# (Path ends, not a pattern: importing re and compiling one costs every run's end.)
_OWN_FILES = tuple(
    f"/heatline/{name}.py"
    for name in ("__main__", "cli", "runner", "session", "scope", "profile", "cli/__init__",
                 "run/launch", "engine/session", "engine/scope")
)


def is_own_frame(frame: StackFrame) -> bool:
    path = frame.get("file", "")
    return path.startswith(_PACKAGE_DIR + os.sep) or path.replace("\\", "/").endswith(_OWN_FILES)


class Stack(namedtuple("Stack", "frames thread python_s native_s system_s cpu_wait_s",
                       defaults=(0.0,))):
    """One recorded stack: ``frames`` (indices into profile["stacks"]["frames"], outermost
    first), its ``thread``, and its ``python_s``, ``native_s``, ``system_s`` and
    ``cpu_wait_s`` (0 in files written before waits for a CPU were measured). (A
    collections.namedtuple: typing's NamedTuple would import typing on every run's path.)"""

    __slots__ = ()

    @property
    def total_s(self) -> float:
        return self.python_s + self.native_s + self.system_s + self.cpu_wait_s


def stacks(profile: Profile) -> Iterator[Stack]:
    """The profile's stacks without heatline's own frames.

    Every recorded stack starts with the launcher (``python -m heatline`` / the ``heatline``
    script, cli/, run/launch.py): everything up to and including the last heatline Python
    frame is the launcher and is dropped, as is any other heatline frame (a native one of
    heatline's own library included). (runpy's frames after it,
    through which python runs ``-m`` modules, directories and zip archives, stay: python's
    own.)
    """
    table = profile.get("stacks") or {}
    frames = table.get("frames", [])
    # A native frame (native: true) of heatline's own library (its allocation hooks) is no
    # launcher frame: it is left out alone, its time staying with the frame above it.
    native = [bool(frame.get("native")) for frame in frames]
    own = [is_own_frame(frame) for frame in frames]
    for entry in table.get("entries", []):
        stack = list(entry["stack"])
        last_own = max((i for i, index in enumerate(stack) if own[index] and not native[index]),
                       default=-1)
        kept = [index for index in stack[last_own + 1 :] if not own[index]]
        yield Stack(kept, entry["thread"], entry["python_s"], entry["native_s"], entry["system_s"],
                    entry.get("cpu_wait_s", 0.0))


def is_elided(frame: StackFrame) -> bool:
    """Whether a stack frame is the marker of a deep stack's elided middle (its ``elided``
    frames were not kept), not a function."""
    return "elided" in frame


class CutStacks(namedtuple("CutStacks",
                           "seconds lost_s total_s deepest open_ended kept outer inner")):
    """How much of a profile's stack time had frames elided (docs/profile-format.md):
    ``seconds``, thread time of the stacks whose middle was elided; ``lost_s``, of which
    stacks where an elided function may be missing from the kept ones; ``total_s``, thread
    time of all stacks; ``deepest``, frames of the deepest cut stack, the elided ones counted;
    ``open_ended``, that stack was deeper still (its outer frames are unknown); ``kept``,
    frames a cut stack keeps (outer + the marker + inner); ``outer`` and ``inner``, frames
    kept at its outer and its inner end."""

    __slots__ = ()


def cut_stacks(profile: Profile) -> CutStacks:
    """The stacks whose middle was elided (all frames counted, heatline's own too)."""
    table = profile.get("stacks") or {}
    frames = table.get("frames", [])
    seconds = lost = total = 0.0
    deepest, open_ended, kept, outer, inner = 0, False, 0, 0, 0
    for entry in table.get("entries", []):
        time = (entry["python_s"] + entry["native_s"] + entry["system_s"]
                + entry.get("cpu_wait_s", 0.0))
        total += time
        at = next((i for i, index in enumerate(entry["stack"]) if is_elided(frames[index])), None)
        if at is None:
            continue
        marker = frames[entry["stack"][at]]
        seconds += time
        if not marker.get("functions_kept"):
            lost += time
        depth = len(entry["stack"]) - 1 + int(marker.get("elided_max", marker["elided"]))
        if depth > deepest or (depth == deepest and marker.get("outer_unknown")):
            deepest, open_ended = depth, bool(marker.get("outer_unknown"))
        if not marker.get("outer_unknown"):
            kept, outer, inner = len(entry["stack"]), at, len(entry["stack"]) - at - 1
    return CutStacks(round(seconds, 6), round(lost, 6), round(total, 6), deepest, open_ended,
                     kept, outer, inner)


def frame_label(frame: StackFrame) -> str:
    """``qualname (file.py:line)``, the usual spelling of a Python frame in flame graphs; an
    elided middle's marker by its name alone (``… 273 frames elided …``)."""
    if is_elided(frame):
        return frame.get("name") or f"… {frame['elided']}+ frames elided …"
    if frame.get("native"):  # a native function: `dgemm_kernel_HASWELL [libopenblas]`
        base = os.path.basename(frame.get("file", "")) or "anonymous"
        return f"{frame.get('name') or '?'} [{base.split('.so', 1)[0]}]"
    name = frame.get("qualname") or frame.get("name") or "?"
    return f"{name} ({os.path.basename(frame.get('file', ''))}:{frame.get('line', 0)})"


def function_key(frame: StackFrame) -> tuple[str, str]:
    return (frame.get("file", ""), frame.get("qualname") or frame.get("name") or "?")


def inclusive_times(profile: Profile) -> dict[tuple[str, str], float]:
    """Inclusive (cumulative) time per function, (file, qualname) -> seconds.

    A stack's time counts once for every distinct function on it (recursion counts once), so
    a function's inclusive time is the time during which it was anywhere on the stack.
    Computed from ``stacks``; time the engine dropped from its stack table (``dropped_s``) is
    missing here, and so is a deep stack's time from a function found only among the frames
    elided from its middle (``cut_stacks().lost_s`` bounds it).
    """
    frames = (profile.get("stacks") or {}).get("frames", [])
    result: dict[tuple[str, str], float] = {}
    for stack in stacks(profile):
        for key in {function_key(frames[i]) for i in stack.frames if not is_elided(frames[i])}:
            result[key] = result.get(key, 0.0) + stack.total_s
    return result


def call_edges(profile: Profile) -> dict[tuple[tuple[str, str], tuple[str, str]], float]:
    """(caller, callee) function pairs -> seconds spent with that call on the stack."""
    frames = (profile.get("stacks") or {}).get("frames", [])
    result: dict[tuple[tuple[str, str], tuple[str, str]], float] = {}
    for stack in stacks(profile):
        # No edge crosses an elided middle: its two sides do not call each other.
        keys = [None if is_elided(frames[i]) else function_key(frames[i]) for i in stack.frames]
        for pair in {(a, b) for a, b in zip(keys, keys[1:]) if a != b and a and b}:
            result[pair] = result.get(pair, 0.0) + stack.total_s
    return result


def calling_only(profile: Profile) -> dict[tuple[str, str], int]:
    """Functions of the profile's files that are on stacks but have no function entry (none
    of their lines was ever the innermost user line: a dispatcher, main()), (file, qualname)
    -> the first of their lines seen on a stack (their first line is not recorded)."""
    files = profile.get("files") or {}
    listed = {
        (path, function.get("qualname") or function.get("name"))
        for path, entry in files.items()
        for function in entry.get("functions", [])
    }
    first_seen: dict[tuple[str, str], int] = {}
    for frame in (profile.get("stacks") or {}).get("frames", []):
        if is_elided(frame):
            continue
        key = function_key(frame)
        if key[0] in files and key not in listed:
            line = frame.get("line", 0)
            first_seen[key] = min(first_seen.get(key, line), line)
    return first_seen


def thread_name(profile: Profile, index: int) -> str:
    """What the reports and exports call a thread: its name and kernel id, "loader (thread
    4243)", "main thread 4242" (the main thread by its default name, MainThread, or without a
    threading name, the kernel's being the program's), a thread
    without a Python thread state after the library its time mostly went to, "python (native
    thread 4250, libopenblas)"; a file without names: "thread 4243". Names are the program's
    text: each renderer escapes them as it escapes function names."""
    threads = profile.get("threads", [])
    if not 0 <= index < len(threads):
        return f"thread {index}"
    thread = threads[index]
    tid, name = thread.get("native_id"), thread.get("name")
    if thread.get("python") is False:
        if name and name.startswith("native thread "):  # older files: the name was this label
            return name
        library = _busiest_library(thread)
        if not name:
            return f"native thread {tid}" + (f" ({library})" if library else "")
        return f"{name} (native thread {tid}" + (f", {library})" if library else ")")
    kind = "main thread" if thread.get("main") else "thread"
    if not name or (thread.get("main") and name in ("MainThread", thread.get("comm"))):
        return f"{kind} {tid}"  # the main thread's default name, or the program's own
    return f"{name} ({kind} {tid})"


def _busiest_library(thread: ThreadRecord) -> str | None:
    """The short name of the library a native thread's named time mostly went to."""
    from heatline.data.native import library_name

    by_library: dict[str | None, float] = {}
    for function in thread.get("native_functions", ()):
        if function["symbol"] != "[other]":
            library = function["library"]
            by_library[library] = by_library.get(library, 0.0) + function["seconds"]
    if not by_library:
        return None
    return library_name(max(by_library.items(), key=lambda item: item[1])[0])


def function_of_line(entry: FileRecord, line: LineRecord) -> str:
    """The function a line of a file entry belongs to: the one the engine charged it to (the
    line's ``function``); for a line without one (context lines, profiles before schema 4), the
    one whose ``def`` is the last at or before the line (nested and later functions win),
    ``<module>`` before any."""
    if line.get("function"):
        return line["function"]
    number = line["line"]
    best, best_line = "<module>", 0
    for function in entry.get("functions", []):
        first = function.get("first_line", 0)
        if best_line < first <= number:
            best, best_line = function.get("qualname") or function.get("name"), first
    return best


# A run never paused has one period from 0 to when sampling stopped, a little before the end of
# the elapsed time (the stop itself): a shortfall below this (and this share) is no pause.
_STOP_SLACK_S = 0.05
_STOP_SLACK_SHARE = 0.02


def profiled_s(profile: Profile) -> float | None:
    """How much of the elapsed time profiling was on, when it was paused for part of it
    (``--off``, ``heatline.pause()``/``resume()``, ``heatline ctl``); None when it ran the whole
    time or the profile does not say (no ``profiled_periods``: older files)."""
    periods = profile.get("profiled_periods")
    if periods is None or profile.get("paused") is False:
        return None
    elapsed = profile.get("elapsed_s", 0.0)
    on = sum(max(end - start, 0.0) for start, end in periods)
    if profile.get("paused"):
        return min(on, elapsed)
    # Files without "paused": the last period ends at the engine's stop, and elapsed_s a little
    # later (the stop's own work, up to tens of milliseconds on a loaded machine).
    slack = max(_STOP_SLACK_S, _STOP_SLACK_SHARE * elapsed)
    if len(periods) == 1 and periods[0][0] <= slack and on >= elapsed - slack:
        return None
    return min(on, elapsed)


def process_keys(processes: Sequence[ProcessRecord]) -> list[str]:
    """Each process's key in ``process_profiles``, in the order of ``processes``: its pid
    (``"1234"``) where no other process of the profile has that pid, else ``"HOST:PID"``
    (``"?"`` for a host not known), and ``"HOST:PID#N"`` (N from 2) for a second process
    with both the same (processes of several runs on one machine, a pid used again)."""
    count: dict[int, int] = {}
    for process in processes:
        count[process["pid"]] = count.get(process["pid"], 0) + 1
    keys: list[str] = []
    seen: dict[str, int] = {}
    for process in processes:
        pid = process["pid"]
        key = str(pid) if count[pid] == 1 else f"{process.get('host') or '?'}:{pid}"
        seen[key] = seen.get(key, 0) + 1
        keys.append(key if seen[key] == 1 else f"{key}#{seen[key]}")
    return keys
