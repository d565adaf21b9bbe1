"""One profile from several processes' profiles (the main process and the children it
started; heatline/run/collect.py collects them): lines, functions and files summed over the
processes, memory timelines put on the main process's clock and summed, a `processes` table,
and each process's own profile under `process_profiles` for `heatline view --pid`.

Pure: profiles in, profile out (docs/profile-format.md, "Child processes")."""

from __future__ import annotations

from collections.abc import Sequence

from heatline.data import labels as labels_report
from heatline.data import memory as memory_report
from heatline.data import native as native_report
from heatline.data.gpu import LINE_KEYS as _GPU_KEYS
from heatline.data.queries import process_keys
from heatline.data.summary import with_summary

# typing only for type checkers: a run's path imports none (heatline/__init__.py).
TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: importing typing costs every run about 4 ms
    from typing import Any
    from heatline.data.model import (
        FileRecord, FunctionRecord, HeldLine, LineRecord, ProcessRecord, Profile, StackFrame,
        Stacks,
    )

# cpu_wait_s: absent from files written before waits for a CPU were measured (read as 0).
_TIME_KEYS = ("python_s", "native_s", "system_s", "cpu_wait_s")
# Points kept in a merged line's or function's memory timeline.
TIMELINE_POINTS = 64
# Lines listed as holding memory at the combined peak (combined_peak.lines), most first.
PEAK_LINES = 10

Process = tuple[dict[str, "Any"], "Profile"]  # (info, profile); info: pid, ppid, role...


def merge_processes(
    main: Process, children: Sequence[Process], *, missing: int = 0,
    end: str = "when the program ended", missing_detail: Sequence[str] = (),
) -> Profile:
    """The merged profile. ``main`` and each child are (info, profile) where info has pid,
    ppid, role, argv, exit and offset_s (when the process started, in seconds after the main
    process did). ``missing``: children that started but left no profile; ``end``: when the
    profile ended, for the warning about them ("at the detach" for heatline attach);
    ``missing_detail``: which they are and why, as far as known (one phrase each)."""
    main_info, main_profile = main
    processes = [main, *sorted(children, key=lambda item: (item[0]["offset_s"], item[0]["pid"]))]
    merged = _copy_to_merge_into(main_profile)
    end_s = main_profile["elapsed_s"]
    for info, profile in processes[1:]:
        _add_profile(merged, profile, info, end_s)
    _add_program_memory(merged, processes)
    _set_percentages(merged)
    host = main_profile.get("host")  # children not on another host are on the main one's
    merged["processes"] = [_process_entry(dict({"host": host}, **info), profile)
                           for info, profile in processes]
    merged["process_profiles"] = dict(zip(
        process_keys(merged["processes"]), (profile for _, profile in processes)))
    if "pid" in merged:
        merged["pid"] = main_info["pid"]
    if missing:
        merged["warnings"].append(
            f"{missing} child process{'es' if missing != 1 else ''} left no profile (killed by "
            f"a signal such as SIGKILL, or still running {end}): "
            f"{'their' if missing != 1 else 'its'} work is missing"
            + (f": {'; '.join(missing_detail)}" if missing_detail else "")
        )
    # The summary's rules need the merged figures (per process kind, the workers' own time).
    return with_summary(merged)


def merge_segments(segments: Sequence[Process]) -> Profile:
    """One process's profile from the profiles of its consecutive parts, in order (an exec
    replaced the program and the run went on in the same process: run/handover.py). Summed
    as merge_processes sums processes, on the first part's clock; ``program``, ``argv`` and
    ``started_at`` are the first part's (what was run), ``elapsed_s`` spans from its start to
    the last part's end; no processes table. Each info has role and offset_s (when the part
    started, on any clock common to the parts)."""
    first_info, first = segments[0]
    base = first_info["offset_s"]
    # An exec frees all of the program's memory: every part but the last ends at 0.
    on_first_clock = [(dict(info, offset_s=info["offset_s"] - base),
                       _memory_freed_at_end(profile) if index < len(segments) - 1 else profile)
                      for index, (info, profile) in enumerate(segments)]
    first = on_first_clock[0][1]
    merged = _copy_to_merge_into(first)
    for info, profile in on_first_clock[1:]:
        _add_profile(merged, profile, dict(info, role="after exec"), first["elapsed_s"])
    _add_program_memory(merged, on_first_clock)
    _set_percentages(merged)
    last_info, last = on_first_clock[-1]
    merged["elapsed_s"] = _round(max(last_info["offset_s"] + last["elapsed_s"],
                                     first["elapsed_s"]))
    return merged


def _memory_freed_at_end(profile: Profile) -> Profile:
    """``profile`` with its memory timelines (the program's, each line's and function's)
    dropping to 0 at its end; shares what it does not change."""
    end = profile["elapsed_s"]

    def ended(timeline: list[list[float]]) -> list[list[float]]:
        return [*timeline, [end, 0]] if timeline and timeline[-1][1] else timeline

    def rows(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [dict(row, timeline=ended(row["timeline"])) if row.get("timeline") else row
                for row in entries]

    return {
        **profile,
        "memory_timeline": ended(profile["memory_timeline"]),
        "files": {path: {**entry, "lines": rows(entry["lines"]),
                         "functions": rows(entry["functions"])}
                  for path, entry in profile["files"].items()},
    }


def _copy_to_merge_into(profile: Profile) -> Profile:
    """A copy of ``profile`` that merging (and --use-virtual-time after it) may change while
    ``profile`` stays as it was, as the main process's own: every dict and list they change is
    new, what they only read is shared. (copy.deepcopy took most of the merge's time, and grows
    with every value of the profile.)"""
    stacks = profile["stacks"]
    return {
        **profile,
        "totals": dict(profile["totals"]),
        "threads": [dict(thread) for thread in profile["threads"]],
        "stacks": {**stacks, "frames": list(stacks["frames"]),
                   "entries": [dict(entry) for entry in stacks["entries"]]},
        "files": {
            path: {**entry, "lines": [dict(row) for row in entry["lines"]],
                   "functions": [dict(row) for row in entry["functions"]]}
            for path, entry in profile["files"].items()
        },
        "memory": dict(profile["memory"]),
        "warnings": list(profile["warnings"]),
        **({"asyncio": dict(profile["asyncio"])} if "asyncio" in profile else {}),
    }


def process_view(profile: Profile, pid: int | str) -> Profile:
    """The profile of one process of a merged profile: ``pid`` is its key in
    ``process_profiles`` (process_keys), or a pid that one process alone has, or
    ``HOST:PID``. KeyError if no process matches; LookupError (its text, one line, names the
    keys) if several do."""
    own = profile.get("process_profiles", {})
    text = str(pid)
    if text in own:
        return own[text]
    processes = profile.get("processes", [])
    host, _, number = text.rpartition(":")
    if not number.isdigit():
        raise KeyError(pid)
    matches = [key for key, process in zip(process_keys(processes), processes)
               if process["pid"] == int(number) and (not host or process.get("host") == host)]
    if len(matches) > 1:
        raise LookupError(f"{len(matches)} processes have pid {text}: give one of "
                          + ", ".join(matches))
    if not matches or matches[0] not in own:
        raise KeyError(pid)
    return own[matches[0]]


def _process_entry(info: dict[str, Any], profile: Profile) -> ProcessRecord:
    totals = profile["totals"]
    return {
        "pid": info["pid"],
        **({"host": info["host"]} if info.get("host") is not None else {}),
        # a distributed engine's worker: its address (heatline.dask)
        **({"address": info["address"]} if info.get("address") else {}),
        "ppid": info["ppid"],
        "role": info["role"],
        "argv": list(info["argv"]),
        "exit": info["exit"],
        "start_s": round(info["offset_s"], 6),
        "elapsed_s": profile["elapsed_s"],
        "cpu_s": profile["cpu_s"],
        **{key: totals.get(key, 0.0) for key in _TIME_KEYS},
        "idle_s": profile.get("idle_s", 0.0),
        "peak_bytes": profile["peak_bytes"],
    }


def _add_profile(merged: Profile, profile: Profile, info: dict[str, Any],
                 end_s: float) -> None:
    offset = info["offset_s"]
    for key in ("samples", "sampled_s", "lost_s", "cpu_s"):
        merged[key] = _round(merged[key] + profile[key])
    # Optional (older files lack them); steal_s is the machine's, over overlapping runs, and
    # cpu_count the machine's.
    for key in ("max_sample_gap_s", "max_tick_s", "steal_s", "cpu_count"):
        if key in profile:
            merged[key] = max(merged.get(key, 0.0), profile[key])
    for key in ("long_gaps", "long_gap_s"):  # optional too: summed over processes
        if key in profile:
            merged[key] = _round(merged.get(key, 0) + profile[key])
    for key, value in profile["totals"].items():
        merged["totals"][key] = _round(merged["totals"].get(key, 0.0) + value)
    if "asyncio" in profile:  # optional: present where an event loop waited
        into = merged.setdefault("asyncio", {})
        for key, value in profile["asyncio"].items():
            into[key] = _round(into.get(key, 0.0) + value)
    merged.update(labels_report.merged(merged, profile))
    thread_base = len(merged["threads"])
    merged["threads"].extend(dict(thread, pid=info["pid"]) for thread in profile["threads"])
    _add_stacks(merged["stacks"], profile["stacks"], thread_base)
    for path, entry in profile["files"].items():
        into = merged["files"].get(path)
        if into is None:
            merged["files"][path] = into = {
                **{key: 0.0 for key in _TIME_KEYS}, "lines": [], "functions": []}
        for key in _TIME_KEYS:
            into[key] = _round(into.get(key, 0.0) + entry.get(key, 0.0))
        into["lines"] = _merge_rows(into["lines"], entry["lines"], ("line",), offset, end_s)
        into["functions"] = _merge_rows(
            into["functions"], entry["functions"], ("qualname", "first_line"), offset, end_s)
    if merged["memory"].get("enabled") and profile["memory"].get("enabled"):
        for key, value in profile["memory"].items():
            if key in memory_report.TOTAL_KEYS and key != "sampling_window_bytes":
                merged["memory"][key] += value
    host = info.get("host")  # named where it is another host's than the main process's
    where = f" on {host}" if host is not None and host != merged.get("host") else ""
    label = f"process {info['pid']}{where} ({info['role']})"
    merged["warnings"].extend(f"{label}: {warning}" for warning in profile["warnings"])
    if profile.get("gpu", {}).get("enabled") and not merged["gpu"].get("enabled"):
        merged["warnings"].append(f"{label} used the GPU; its GPU figures are in its own "
                                  "profile (view --pid), not in the merged one")


def _add_stacks(into: Stacks, stacks: Stacks, thread_base: int) -> None:
    # A frame is all its fields: an elided middle's marker is told apart by its own (how many
    # frames, whether their functions were kept), a function's by file, names and line.
    index = {_frame_key(f): i for i, f in enumerate(into["frames"])}
    remap = []
    for frame in stacks["frames"]:
        key = _frame_key(frame)
        if key not in index:
            index[key] = len(into["frames"])
            into["frames"].append(dict(frame))
        remap.append(index[key])
    for entry in stacks["entries"]:
        into["entries"].append(
            dict(entry, stack=[remap[i] for i in entry["stack"]],
                 thread=entry["thread"] + thread_base)
        )
    into["dropped_s"] = _round(into["dropped_s"] + stacks["dropped_s"])


def _frame_key(frame: StackFrame) -> tuple[tuple[str, Any], ...]:
    return tuple(sorted(frame.items()))


def _merge_rows(rows: list[dict[str, Any]], others: list[dict[str, Any]], key: Sequence[str],
                offset: float, end_s: float) -> list[dict[str, Any]]:
    """Lines (keyed by number) or functions (by qualname and first line) of one file, summed.
    A row's memory timeline is shifted by ``offset`` onto the main process's clock."""
    by_key = {tuple(row[k] for k in key): row for row in rows}
    for other in others:
        row = by_key.get(tuple(other[k] for k in key))
        shifted = [[round(t + offset, 6), v] for t, v in other.get("timeline", [])]
        if row is None:
            by_key[tuple(other[k] for k in key)] = dict(other, timeline=shifted)
            continue
        for name in _TIME_KEYS:
            row[name] = _round(row.get(name, 0.0) + other.get(name, 0.0))
        for name in (*memory_report.SUMMED_KEYS, *_GPU_KEYS):
            if name in other:
                row[name] = row.get(name, 0) + other[name]
        if row.get("native_functions") or other.get("native_functions"):
            row["native_functions"] = native_report.merged(
                row.get("native_functions", []), other.get("native_functions", []))
        if not row.get("source") and other.get("source"):
            row["source"] = other["source"]
        if row.get("function") is None and other.get("function") is not None:
            row["function"] = other["function"]
        timelines = [timeline for timeline in (row["timeline"], shifted) if timeline]
        if timelines:
            summed = memory_report.sum_timelines(timelines)
            row["timeline"] = memory_report.decimate(summed, TIMELINE_POINTS)
            row["peak_bytes"] = max(max(v for _, v in summed), row["growth_bytes"])
        else:
            row["peak_bytes"] = max(row["peak_bytes"], other["peak_bytes"])
        leaks = [leak for leak in (row["leak"], other["leak"]) if leak is not None]
        row["leak"] = max(leaks, key=lambda leak: leak["likelihood"]) if leaks else None
    merged = list(by_key.values())
    if key == ("line",):
        merged.sort(key=lambda row: row["line"])
    else:
        merged.sort(key=lambda row: (-_total(row), row["first_line"], row["qualname"]))
    return merged


def _add_program_memory(merged: Profile, processes: Sequence[Process]) -> None:
    """The program's memory timeline and peak: the sum over the processes alive at each
    moment (each process's timeline on the main process's clock, and nothing after it ended).
    The combined peak gets its own moment and the lines of every process that held memory
    then (combined_peak, peak_at); the main process's own peak stays as main_peak_bytes and
    main_peak_at."""
    main_profile = processes[0][1]
    timelines = []
    for number, (info, profile) in enumerate(processes):
        if not profile["memory_timeline"]:
            continue
        offset = info["offset_s"]
        shifted = [[round(t + offset, 6), v] for t, v in profile["memory_timeline"]]
        end = round(offset + profile["elapsed_s"], 6)
        if number and shifted[-1][1] and shifted[-1][0] < end:
            shifted.append([end, 0])  # a child that ended holds nothing any more
        timelines.append(shifted)
    if not timelines:
        return
    summed = memory_report.sum_timelines(timelines)
    merged["memory_timeline"] = memory_report.decimate(summed, 200)
    top = max(v for _, v in summed)
    own = main_profile["peak_at"]
    merged["main_peak_bytes"] = main_profile["peak_bytes"]
    merged["main_peak_at"] = own
    if top >= main_profile["peak_bytes"]:
        peak_t = next(t for t, v in summed if v == top)  # the first moment it was reached
    elif own is not None:  # the timeline's buckets missed the main process's exact peak
        peak_t = own["t_s"]
    else:
        merged["peak_bytes"] = main_profile["peak_bytes"]
        return
    merged["peak_bytes"] = max(top, main_profile["peak_bytes"])
    held = _held_at(processes, peak_t)
    merged["combined_peak"] = {"t_s": peak_t, "lines": held[:PEAK_LINES]}
    merged["peak_at"] = None if not held else {
        "file": held[0]["file"], "line": held[0]["line"], "t_s": peak_t, "pid": held[0]["pid"]}


def _held_at(processes: Sequence[Process], t: float) -> list[HeldLine]:
    """The lines of every process holding memory at time t of the main process's clock, most
    first: each line's own timeline (its process's clock) read at that moment; nothing for a
    process not started yet or already ended."""
    held = []
    for info, profile in processes:
        offset = info["offset_s"]
        if not offset <= t <= round(offset + profile["elapsed_s"], 6):
            continue
        for path, entry in profile["files"].items():
            for line in entry["lines"]:
                # Shifted as the program's timeline was, so that a line's point at the peak's
                # event has the very time the peak was found at.
                shifted = [[round(point_t + offset, 6), v] for point_t, v in line["timeline"]]
                amount = memory_report.value_at(shifted, t)
                if amount > 0:
                    held.append({"pid": info["pid"], "file": path, "line": line["line"],
                                 "bytes": amount})
    held.sort(key=lambda item: (-item["bytes"], item["pid"], item["file"], item["line"]))
    return held


def _set_percentages(profile: Profile) -> None:
    total = sum(profile["totals"].get(key, 0.0) for key in _TIME_KEYS)

    def fill(entry: dict[str, Any]) -> None:
        for key in _TIME_KEYS:
            entry.setdefault(key, 0.0)  # type: ignore[misc]
            share = entry[key] * 100.0 / total if total else 0.0
            entry[key.replace("_s", "_pct")] = round(share, 3)

    for entry in profile["files"].values():
        fill(entry)
        for row in (*entry["lines"], *entry["functions"]):
            fill(row)
    profile["files"] = dict(
        sorted(profile["files"].items(), key=lambda item: (-_total(item[1]), item[0]))
    )


def _total(entry: FileRecord | FunctionRecord | LineRecord) -> float:
    return sum(entry.get(key, 0.0) for key in _TIME_KEYS)


def _round(value: float) -> float:
    return round(value, 6) if isinstance(value, float) else value
