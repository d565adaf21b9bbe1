"""Memory fields of the profile, built once from the engine's per-line memory records, and the
lists of those fields (a line's, and the program's totals) that the rest of heatline reads.

The engine (memhooks.c) samples allocations by bytes and keeps, for each user line, estimates of
the bytes it allocated (Python / native), freed, still holds, its peak, the bytes copied while
on it, and a bounded timeline of what it holds. This module turns those into the profile's
fields (docs/profile-format.md) and applies the leak rule below. It runs once per profile, not
per event, so it is Python.

The leak rule (docs/design-memory.md, "Leaks"): a line is a likely leak when the memory it allocated
and still holds at the end was accumulated steadily over the rest of the run, not at once.
From the line's first allocation t0 to the end of the run T, take the first times its live
bytes reached 25%, 75% and 100% of what it holds at the end. The spread (t75 - t25) / (T - t0)
is 0.5 for growth at a steady rate over the whole span, and near 0 for memory allocated at
once or in a short burst; the lateness (t100 - t0) / (T - t0) is near 1 when the growth goes
on until the end. likelihood = min(1, 2 x spread) x min(1, lateness / 0.75). A line is flagged
when the likelihood is at least LEAK_THRESHOLD, it still holds at least half its peak at the
end, and at least LEAK_MIN_SAMPLES of its sampled allocations survive. A temporary that is
freed fails the second test; one buffer allocated once and kept, or a structure built in a
burst and kept, has no spread; memory that oscillates (temporaries rebound each iteration)
reaches its final level in its first cycle. Only times are compared, never intervals of equal
length, so a leak whose steps are spaced unevenly (phases of different lengths between them)
is still recognised. The growth rate is what the line gained from its first point to t100,
divided by the time that took.
"""

from __future__ import annotations

from collections.abc import Sequence

from heatline.data import snapshot as engine_units
from heatline.data.snapshot import Timeline  # [[t_s, bytes], ...], sorted by time

# typing only for type checkers: a run's path imports none (heatline/__init__.py).
TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: importing typing costs every run about 4 ms
    from typing import Any
    from heatline.data.model import Leak, MemoryFields, Profile

LEAK_THRESHOLD = 0.5
LEAK_MIN_SAMPLES = 3

# A line's or function's memory byte fields, in the profile's order (the engine's line records
# use the same names); all but peak_bytes add up over lines, functions and processes.
LINE_KEYS = (
    "alloc_python_bytes",
    "alloc_native_bytes",
    "freed_bytes",
    "growth_bytes",
    "peak_bytes",
    "copy_bytes",
)
SUMMED_KEYS = tuple(key for key in LINE_KEYS if key != "peak_bytes")
# The profile's memory totals ("memory" when enabled; the engine's snapshot uses the same
# names). All but sampling_window_bytes add up over processes.
TOTAL_KEYS = (
    "sampling_window_bytes",
    "alloc_python_bytes",
    "alloc_native_bytes",
    "freed_bytes",
    "live_bytes_at_end",
    "copy_bytes",
    "unattributed_alloc_bytes",
    "unattributed_copy_bytes",
    "samples",
    "untracked_samples",
    "redirected_slots",
)


def sum_timelines(timelines: Sequence[Timeline]) -> Timeline:
    """The sum of step timelines, as a step timeline with a point at each change: one sweep
    over every point's change of its own timeline, in time order (merging many processes'
    timelines stays O(n log n))."""
    if len(timelines) == 1:
        return [list(point) for point in timelines[0]]
    steps = []
    for timeline in timelines:
        previous = 0
        for t, value in timeline:
            steps.append((t, value - previous))
            previous = value
    steps.sort(key=lambda step: step[0])
    summed: Timeline = []
    total = 0
    for t, change in steps:
        total += change
        if summed and summed[-1][0] == t:
            summed[-1][1] = total
        else:
            summed.append([t, total])
    return summed


def value_at(timeline: Timeline, t: float) -> int:
    """A step timeline's value at time t (0 before its first point)."""
    value = 0
    for point_t, point_value in timeline:
        if point_t > t:
            break
        value = point_value
    return value


def leak_likelihood(t0: float, t25: float, t75: float, t100: float, end_s: float) -> float:
    """The rule's likelihood from its moments (module docstring): the line's first point, the
    first times it held 25%, 75% and 100% of what it holds at the end, and the end of the run."""
    span = end_s - t0
    spread = (t75 - t25) / span
    lateness = (t100 - t0) / span
    return min(1.0, 2.0 * spread) * min(1.0, lateness / 0.75)


def leak_of(
    timeline: Timeline, *, peak: int, live_end: int, surviving_samples: int, end_s: float
) -> Leak | None:
    """Apply the leak rule (module docstring) to one line; None when it is not a likely leak."""
    if not timeline or peak <= 0 or surviving_samples < LEAK_MIN_SAMPLES:
        return None
    if live_end < 0.5 * peak:
        return None
    t0 = timeline[0][0]
    span = end_s - t0
    if span <= 0 or live_end <= 0:
        return None

    def first_reaching(fraction: float) -> float:
        level = fraction * live_end
        return next((t for t, value in timeline if value >= level), timeline[-1][0])

    t25, t75, t100 = first_reaching(0.25), first_reaching(0.75), first_reaching(1.0)
    likelihood = leak_likelihood(t0, t25, t75, t100, end_s)
    if likelihood < LEAK_THRESHOLD:
        return None
    gained = live_end - timeline[0][1]
    rate = gained / (t100 - t0) if t100 > t0 else 0.0
    return {"likelihood": round(likelihood, 3), "growth_bytes_per_s": round(rate, 1)}


_ZEROS = dict.fromkeys(LINE_KEYS, 0)


def empty_fields() -> MemoryFields:
    """The memory fields of a line or function that has none."""
    return {**_ZEROS, "timeline": [], "leak": None}


def below_malloc_threshold(profile: Profile, threshold: int) -> Profile:
    """The profile as reported with --malloc-threshold N (Scalene's flag: "only report profiles
    with at least this many allocations"). Scalene counts allocation samples, one per window of
    bytes allocated; heatline samples by bytes with the same kind of window (large allocations
    are recorded exactly, as the samples they stand for), so a line or function counts as
    alloc_bytes / sampling_window_bytes allocations: its allocation figures (allocated, freed,
    growth, peak, timeline, leak) are reported only when it allocated at least N windows of
    bytes. Copies are not allocations and stay. A copy; the profile itself is unchanged."""
    memory = profile.get("memory") or {}
    window = memory.get("sampling_window_bytes") or 0
    if threshold <= 1 or not memory.get("enabled") or window <= 0:
        return profile
    minimum = threshold * window

    def shown(entry: dict[str, Any]) -> dict[str, Any]:
        allocated = entry.get("alloc_python_bytes", 0) + entry.get("alloc_native_bytes", 0)
        if not allocated or allocated >= minimum:
            return entry
        return {**entry, **empty_fields(), "copy_bytes": entry.get("copy_bytes", 0)}

    files = {
        path: {
            **entry,
            "lines": [shown(line) for line in entry["lines"]],
            "functions": [shown(function) for function in entry["functions"]],
        }
        for path, entry in profile["files"].items()
    }
    return {**profile, "files": files}


def line_fields(record: dict[str, Any], end_s: float) -> MemoryFields:
    """The memory fields of one line from its engine record (docs/engine-api.md): the same
    names; what the line holds at the end and its peak never below 0, and its leak verdict."""
    fields = empty_fields()
    fields.update((key, max(int(record[key]), 0)) for key in LINE_KEYS)
    fields["timeline"] = engine_units.timeline(record["timeline"])
    fields["leak"] = leak_of(
        fields["timeline"],
        peak=fields["peak_bytes"],
        live_end=fields["growth_bytes"],
        surviving_samples=int(record["alloc_samples"]) - int(record["freed_samples"]),
        end_s=end_s,
    )
    return fields


def function_fields(lines: Sequence[MemoryFields], end_s: float) -> MemoryFields:
    """A function's memory fields from its lines' fields: sums, and a peak and leak verdict
    taken from the sum of the lines' timelines (the peak of a sum is not the sum of peaks)."""
    fields = empty_fields()
    timelines = [line["timeline"] for line in lines if line["timeline"]]
    for key in SUMMED_KEYS:
        fields[key] = sum(line[key] for line in lines)
    if not timelines:
        return fields
    timeline = sum_timelines(timelines)
    fields["timeline"] = decimate(timeline, 64)
    fields["peak_bytes"] = max(max(v for _, v in timeline), fields["growth_bytes"])
    leaking = [line["leak"] for line in lines if line["leak"] is not None]
    if leaking:
        fields["leak"] = {
            "likelihood": max(leak["likelihood"] for leak in leaking),
            "growth_bytes_per_s": round(sum(leak["growth_bytes_per_s"] for leak in leaking), 1),
        }
    return fields


def decimate(timeline: Timeline, limit: int) -> Timeline:
    """At most `limit` points: equal-width time buckets, each keeping its highest point (so
    the peak survives) and the last point overall."""
    if len(timeline) <= limit:
        return [list(point) for point in timeline]
    start, end = timeline[0][0], timeline[-1][0]
    width = (end - start) / (limit - 1) or 1.0
    buckets: dict[int, list[Any]] = {}
    for t, v in timeline:
        index = min(int((t - start) / width), limit - 2)
        if index not in buckets or v > buckets[index][1]:
            buckets[index] = [t, v]
    kept = [buckets[i] for i in sorted(buckets)]
    if kept[-1] != list(timeline[-1]):
        kept.append(list(timeline[-1]))
    return kept
