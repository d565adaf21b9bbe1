"""One profile from the profiles of several runs (`heatline merge`): runs on several machines
(the nodes of a torchrun or Slurm job) or several runs on one, read as one job.

Every process of every input appears once (an input that is itself merged gives each of its
processes), kept apart by host and pid; each keeps its role. The clocks are aligned by each
profile's start time (wall-clock Unix time): time 0 of the result is the earliest start, and
every process's ``start_s`` and memory timeline are on that clock. The merge itself is
merge.py's. Pure: profiles in, profile out (docs/profile-format.md, "Merged runs")."""

from __future__ import annotations

import calendar
import os
import time

from heatline.data.merge import merge_processes
from heatline.data.queries import process_keys
from heatline.data.summary import with_summary

# typing only for type checkers (as in merge.py).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from heatline.data.model import Profile

_INFO_KEYS = ("pid", "ppid", "role", "argv", "exit")


class MergeError(Exception):
    """The profiles cannot be merged; str() is one line naming the file(s)."""


def start_epoch(profile: Profile) -> float | None:
    """The Unix time of ``profile``'s time 0: ``started_at_epoch`` (to the microsecond), else
    ``started_at`` read back (to the millisecond: files written before the epoch was
    recorded); None when neither says."""
    if "started_at_epoch" in profile:
        return float(profile["started_at_epoch"])
    text = profile.get("started_at") or ""
    try:
        whole, _, fraction = text.rstrip("Z").partition(".")
        seconds = calendar.timegm(time.strptime(whole, "%Y-%m-%dT%H:%M:%S"))
        return seconds + (float("0." + fraction) if fraction.isdigit() else 0.0)
    except ValueError:
        return None


def merge_runs(named: Sequence[tuple[str, Profile]]) -> Profile:
    """The merged profile of ``named``, (path, profile) pairs of at least two profiles as
    data.io.load returns them. MergeError when they are of different schema versions, when two
    hold the same run (a process with the same host, pid and start), or when a merged input
    lacks one of its processes' own profiles."""
    first_path, first = named[0]
    for path, profile in named[1:]:
        if profile["schema_version"] != first["schema_version"]:
            raise MergeError(
                f"'{first_path}' has profile schema version {first['schema_version']} and "
                f"'{path}' version {profile['schema_version']}: merge profiles of one version "
                "(each heatline writes its own; run the same heatline version everywhere)")
    warnings: list[str] = []
    found: list[tuple[dict[str, Any], Profile]] = []
    seen: dict[tuple[Any, ...], str] = {}
    unknown_start = []
    for path, profile in named:
        epoch = start_epoch(profile)
        if epoch is None:
            unknown_start.append(path)
        for info, own in _processes(path, profile):
            start_s = info.pop("start_s")
            info["epoch"] = None if epoch is None else epoch + start_s
            identity = (info["host"], info["pid"],
                        own["started_at"] if epoch is None else round(epoch + start_s, 3))
            if identity in seen:
                raise MergeError(_same_run(seen[identity], path, info, own))
            seen[identity] = path
            found.append((info, own))
        warnings += [f"{os.path.basename(path)}: {line}" for line in _run_warnings(profile)]
    known = [info["epoch"] for info, _ in found if info["epoch"] is not None]
    origin = min(known) if known else 0.0
    for info, _ in found:
        epoch = info.pop("epoch")
        info["offset_s"] = 0.0 if epoch is None else round(epoch - origin, 6)
    for path in unknown_start:
        warnings.append(f"{os.path.basename(path)} records no start time: its processes are "
                        "put at the start of the merged profile")
    order = sorted(range(len(found)), key=lambda n: (found[n][0]["offset_s"], n))
    main = found[order[0]]
    main[0]["offset_s"] = 0.0
    merged = merge_processes(main, [found[n] for n in order[1:]])
    merged["elapsed_s"] = round(max(info["offset_s"] + own["elapsed_s"] for info, own in found),
                                6)
    if known:
        merged["started_at_epoch"] = round(origin, 6)
    if main[0]["host"] is not None:
        merged["host"] = main[0]["host"]
    merged["pid"] = main[0]["pid"]
    merged["warnings"] += warnings
    return with_summary(merged)  # again: elapsed_s is the whole job's


def _processes(path: str, profile: Profile) -> list[tuple[dict[str, Any], Profile]]:
    """(info, own profile) of every process of ``profile``: info has pid, ppid, role, argv,
    exit, host (None where not known) and start_s (after the profile's time 0)."""
    host = profile.get("host")
    if "processes" not in profile:
        attached = profile.get("attached")
        info = {"pid": profile.get("pid", attached["pid"] if attached else 0), "ppid": 0,
                "role": "main", "argv": list(profile["argv"]),
                "exit": "detached" if attached and attached["ended_by"] == "detach" else "exit",
                "host": host, "start_s": 0.0}
        return [(info, profile)]
    own = profile["process_profiles"]
    found = []
    for key, process in zip(process_keys(profile["processes"]), profile["processes"]):
        own_profile = own.get(key, own.get(str(process["pid"])))
        if own_profile is None:
            raise MergeError(f"'{path}' has no profile of its process {key} (process_profiles)")
        info = {name: process[name] for name in _INFO_KEYS}
        info["host"] = process.get("host", host)
        info["start_s"] = process["start_s"]
        found.append((info, own_profile))
    return found


def _run_warnings(profile: Profile) -> list[str]:
    """A merged input's warnings about the run as a whole (children that left no profile):
    those its processes' own profiles do not give again."""
    if "processes" not in profile:
        return []
    own = {line for entry in profile["process_profiles"].values() for line in entry["warnings"]}
    return [line for line in profile["warnings"]
            if line not in own and not line.startswith("process ")]


def _same_run(earlier: str, path: str, info: dict[str, Any], own: Profile) -> str:
    if earlier == path:
        return f"'{path}' is given twice: give each profile once"
    where = f" on {info['host']}" if info["host"] is not None else ""
    return (f"'{earlier}' and '{path}' hold the same run (process {info['pid']}{where}, "
            f"started {own.get('started_at') or 'at the same time'}): give each run once")
