"""The time of a window of a run: the difference of two profiles of the same running session
(the pull endpoint's ``/debug/pprof/profile?seconds=N``, heatline/serve.py).

A session's profile only grows: every stack's python/native/system/cpu_wait seconds are totals
since the start. The window's stack time is the later profile's minus the earlier one's, stack
by stack, a stack being its thread and its frames (file, function, line), not the indexes of
either profile's frame table, which are each profile's own.
"""

from __future__ import annotations

from typing import Any

from heatline.options import DEFAULT_SAMPLING_INTERVAL_S

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: the model imports typing
    from heatline.data.model import Profile

_KINDS = ("python_s", "native_s", "system_s", "cpu_wait_s")


def _keyed(profile: Profile) -> dict[tuple, dict[str, Any]]:
    table = profile.get("stacks") or {}
    frames = table.get("frames", [])
    threads = profile.get("threads", [])
    keyed: dict[tuple, dict[str, Any]] = {}
    for entry in table.get("entries", []):
        index = entry["thread"]
        thread = threads[index].get("native_id") if 0 <= index < len(threads) else index
        key = (thread, tuple((frames[i].get("file"), frames[i].get("qualname"),
                              frames[i].get("line"), frames[i].get("elided"))
                             for i in entry["stack"]))
        seen = keyed.get(key)
        if seen is None:
            keyed[key] = {"entry": entry, "frames": [frames[i] for i in entry["stack"]],
                          **{kind: entry.get(kind, 0.0) for kind in _KINDS}}
        else:  # the same stack under two entries (merged elided counts): one sum
            for kind in _KINDS:
                seen[kind] += entry.get(kind, 0.0)
    return keyed


def between(before: Profile, after: Profile) -> Profile:
    """A profile holding the stacks' time from ``before`` to ``after`` (two profiles of one
    session, ``after`` taken later), with ``after``'s threads and settings and the window's
    elapsed time. Memory is not windowed: the result has none."""
    earlier = _keyed(before)
    frames: list[dict[str, Any]] = []
    frame_index: dict[int, int] = {}
    entries = []
    for key, stack in _keyed(after).items():
        old = earlier.get(key)
        values = {kind: max(stack[kind] - (old[kind] if old else 0.0), 0.0) for kind in _KINDS}
        if not any(values.values()):
            continue
        indexes = []
        for frame in stack["frames"]:
            if id(frame) not in frame_index:
                frame_index[id(frame)] = len(frames)
                frames.append(frame)
            indexes.append(frame_index[id(frame)])
        entries.append({"stack": indexes, "thread": stack["entry"]["thread"], **values})
    return {
        "sampling_interval_s": after.get("sampling_interval_s", DEFAULT_SAMPLING_INTERVAL_S),
        "elapsed_s": max(after.get("elapsed_s", 0.0) - before.get("elapsed_s", 0.0), 0.0),
        "threads": after.get("threads", []),
        "stacks": {"frames": frames, "entries": entries, "dropped_s": 0.0},
        "memory": {"enabled": False},
        "gpu": {"enabled": False},
    }
