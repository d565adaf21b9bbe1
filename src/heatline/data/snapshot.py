"""The engine snapshot's vocabulary (docs/engine-api.md), read in one place.

The snapshot (module.c) names every quantity with the profile's own field name
(docs/profile-format.md), with one difference: where the engine gives integer nanoseconds the
name ends in ``_ns`` where the profile's ends in ``_s``, a timeline's points are
``[t_ns, value]`` lists where the profile's are ``[t_s, value]``, and profiled_periods holds
``[start_ns, end_ns]`` pairs. This module is the one place those become seconds; nothing else
renames a snapshot field."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

# typing only for type checkers: a run's path imports none (heatline/__init__.py).
TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: importing typing costs every run about 4 ms
    from typing import Any

Timeline = list[list["Any"]]  # [[t_s, value], ...], sorted by time

# A stack's frames are (function_id, line) pairs, except where the engine elided the middle of
# a deep stack: there one (marker, frames elided) pair stands for them, the marker one of
# these ids, which no function has (docs/engine-api.md, stats.h).
ELIDED_KEPT = 0xFFFFFFFF  # every function of the elided frames is among the kept frames too
ELIDED_LOST = 0xFFFFFFFE  # some may not be
ELIDED_OPEN = 0xFFFFFFFD  # deeper than the walk follows: no outer part; frames followed past


def is_elided(function_id: int) -> bool:
    """Whether a stack frame's function id is the marker of elided frames."""
    return function_id in (ELIDED_KEPT, ELIDED_LOST, ELIDED_OPEN)


def elided_frame(marker: int, fewest: int, most: int) -> dict[str, Any]:
    """The profile's frame (docs/profile-format.md, "stacks") for a marker of elided frames,
    standing for between ``fewest`` and ``most`` of them (the stacks it merges)."""
    open_ended = marker == ELIDED_OPEN
    count = f"{fewest}" if fewest == most else f"{fewest}-{most}"
    label = f"… {count}{'+' if open_ended else ''} frames elided …"
    frame = {"file": "", "name": label, "qualname": label, "line": 0, "elided": fewest,
             "elided_max": most, "functions_kept": marker == ELIDED_KEPT}
    if open_ended:
        frame["outer_unknown"] = True
    return frame


def seconds(ns: float) -> float:
    """Nanoseconds as the profile's seconds (microsecond resolution)."""
    return round(ns / 1e9, 6)


def timeline(points: Iterable[Sequence[int]]) -> Timeline:
    """Engine timeline points [t_ns, value] as [t_s, value], sorted by time."""
    return sorted([seconds(t_ns), int(value)] for t_ns, value in points)


def periods(pairs: Iterable[Sequence[int]]) -> list[list[float]]:
    """Engine [start_ns, end_ns] pairs (profiled_periods) as [start_s, end_s]."""
    return [[seconds(start), seconds(end)] for start, end in pairs]


def in_seconds(record: dict[str, Any]) -> dict[str, Any]:
    """A snapshot record in the profile's units: each ``X_ns`` field becomes ``X_s`` in seconds,
    each ``*timeline`` field's points [t_s, value], nested records likewise; other fields (and
    lists of records) as they are, in the same order."""
    converted: dict[str, Any] = {}
    for key, value in record.items():
        if key.endswith("_ns"):
            converted[key[:-3] + "_s"] = seconds(value)
        elif key.endswith("timeline"):
            converted[key] = timeline(value)
        elif isinstance(value, dict):
            converted[key] = in_seconds(value)
        else:
            converted[key] = value
    return converted


def place(where: dict[str, Any] | None, files: list) -> dict[str, Any] | None:
    """A snapshot's {"file": file_id, "line", "t_ns"} (where and when a peak was reached) as
    the profile's {"file": path, "line", "t_s"}; None stays None."""
    if where is None:
        return None
    return {**in_seconds(where), "file": files[where["file"]]["path"]}
