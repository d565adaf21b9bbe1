"""The profile's ``steps`` (docs/profile-format.md) from the engine side's step record
(heatline/engine/steps.py: the boundaries as ns since the engine's start), and the words the
reports use for it. Pure."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any
    from heatline.data.model import Steps


def from_record(record: dict[str, Any] | None) -> tuple[dict[str, Any], list[str]]:
    """({"steps": ...} or {}, warnings): ``steps`` is present when the program marked at
    least one step boundary or a step window was asked for."""
    if not record:
        return {}, []
    marks = [mark / 1e9 for mark in record.get("marks_ns") or []]
    window = record.get("window")
    warnings = []
    others = record.get("other_thread_calls") or 0
    if others:
        warnings.append(
            f"{others} step mark{'s' if others != 1 else ''} from threads other than the one "
            "that marked the first step were ignored: steps are marked from one thread")
    if not marks and window is None:
        return {}, warnings
    durations = [round(end - start, 9) for start, end in zip(marks, marks[1:])]
    steps: Steps = {
        "source": record.get("source"),
        "count": len(durations),
        "started_s": [round(start, 9) for start in marks[:-1]],
        "durations_s": durations,
        **statistics(durations),
        "window": None if window is None else [int(window[0]), int(window[1])],
    }
    return {"steps": steps}, warnings


def statistics(durations: list[float]) -> dict[str, float]:
    """median_s, mean_s, min_s, max_s of ``durations`` (0 each when there are none)."""
    if not durations:
        return {"median_s": 0.0, "mean_s": 0.0, "min_s": 0.0, "max_s": 0.0}
    ordered = sorted(durations)
    middle = len(ordered) // 2
    median = ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
    return {"median_s": round(median, 9), "mean_s": round(sum(ordered) / len(ordered), 9),
            "min_s": ordered[0], "max_s": ordered[-1]}


def window_words(profile: Any) -> str | None:
    """What the step window covered, in words (None without a window): "profiled steps 4-6
    only (--steps 4:6) of the 10 the program marked", or what was asked for and what the
    program marked when it marked fewer."""
    steps = profile.get("steps")
    window = None if steps is None else steps.get("window")
    if window is None:
        return None
    first, last = window
    asked = f"step {first}" if first == last else f"steps {first}-{last}"
    count = steps["count"]
    marked = f"the program marked {count} step{'s' if count != 1 else ''}"
    if count >= last:
        return f"profiled {asked} only (--steps {first}:{last}) of the {count} the program marked"
    if not profile.get("profiled_periods"):
        return f"{asked} asked for (--steps {first}:{last}), but {marked}: nothing was profiled"
    return (f"{asked} asked for (--steps {first}:{last}), but {marked}: profiled from the "
            f"start of step {first} to the end of the run")
