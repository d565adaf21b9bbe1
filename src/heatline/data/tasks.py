"""A distributed engine's tasks as a profile's dimension: the `tasks` table
(docs/profile-format.md, `tasks`) from the engine's own record of each task's run (name, wall
time) and the sampled stacks of the processes that ran them.

Pure: spans and profiles in, table out. The engine integrations (heatline/integrations/ray.py)
gather both. Dask's (heatline/integrations/dask.py) records in each worker the function each
task ran, and finds the tasks in that worker's stacks by it (worker_tasks), then sums the
workers' tables (summed)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only
    from typing import Any

    from heatline.data.model import Profile, Task

# A task's lines kept in the table, most time first.
TASK_LINES = 5
_TIMES = ("python_s", "native_s", "system_s")


def matches(qualname: str, name: str) -> bool:
    """Whether a frame's function is the task ``name``: the engine names a task by its
    function's name, or ``Class.method`` for an actor's method; the frame's qualified name
    may have enclosing scopes before it (``outer.<locals>.work``)."""
    return qualname == name or qualname.endswith("." + name)


def attributed(profile: Profile, names: Iterable[str]) -> dict[str, dict[str, Any]]:
    """The sampled time of one process charged to each task name: the stacks whose frames
    include the task's function (the outermost such frame decides, so a task calling
    another's function locally stays the caller's). Per name: python_s, native_s, system_s,
    ``lines`` {(file, line): seconds} (where its time went: the innermost Python frame of
    each stack) and ``touched`` (every Python line of its stacks at or below the task's
    frame, for its memory)."""
    names = list(names)
    frames = profile["stacks"]["frames"]
    owner: list[str | None] = []
    for frame in frames:
        found = None
        if not frame.get("native") and frame.get("file"):
            found = next((name for name in names if matches(frame["qualname"], name)), None)
        owner.append(found)
    result: dict[str, dict[str, Any]] = {}
    for entry in profile["stacks"]["entries"]:
        stack = entry["stack"]
        depth = next((d for d, index in enumerate(stack) if owner[index] is not None), None)
        if depth is None:
            continue
        name = owner[stack[depth]]
        into = result.setdefault(name, {**{key: 0.0 for key in _TIMES}, "lines": {},
                                        "touched": set()})
        for key in _TIMES:
            into[key] += entry.get(key, 0.0)
        own = [frames[i] for i in stack[depth:] if not frames[i].get("native")
               and frames[i].get("file")]
        for frame in own:
            into["touched"].add((frame["file"], frame["line"]))
        if own:
            leaf = (own[-1]["file"], own[-1]["line"])
            spent = sum(entry.get(key, 0.0) for key in (*_TIMES, "cpu_wait_s"))
            into["lines"][leaf] = into["lines"].get(leaf, 0.0) + spent
    return result


def _alloc(profile: Profile, touched: set[tuple[str, int]]) -> int:
    total = 0
    for path, entry in profile["files"].items():
        for line in entry["lines"]:
            if (path, line["line"]) in touched:
                total += line.get("alloc_python_bytes", 0) + line.get("alloc_native_bytes", 0)
    return total


def tasks_table(spans: Sequence[tuple[str, float]],
                profiles: Sequence[Profile]) -> list[Task]:
    """The `tasks` table: ``spans`` is every task run in the profiled window as (name, wall
    seconds), from the engine's record; ``profiles`` the profiles of the processes that ran
    them. One entry per name, the longest wall_s first."""
    table: dict[str, Task] = {}
    for name, wall in spans:
        row = table.get(name)
        if row is None:
            row = table[name] = {"name": name, "count": 0, "wall_s": 0.0,
                                 **{key: 0.0 for key in _TIMES},  # type: ignore[typeddict-item]
                                 "alloc_bytes": 0, "lines": []}
        row["count"] += 1
        row["wall_s"] += wall
    lines: dict[str, dict[tuple[str, int], float]] = {name: {} for name in table}
    for profile in profiles:
        for name, found in attributed(profile, table).items():
            row = table[name]
            for key in _TIMES:
                row[key] += found[key]  # type: ignore[literal-required]
            row["alloc_bytes"] += _alloc(profile, found["touched"])
            for where, seconds in found["lines"].items():
                lines[name][where] = lines[name].get(where, 0.0) + seconds
    for name, row in table.items():
        for key in ("wall_s", *_TIMES):
            row[key] = round(row[key], 6)  # type: ignore[literal-required]
        top = sorted(lines[name].items(), key=lambda item: (-item[1], item[0]))[:TASK_LINES]
        row["lines"] = [{"file": file, "line": line, "time_s": round(seconds, 6)}
                        for (file, line), seconds in top]
    return sorted(table.values(), key=lambda row: (-row["wall_s"], row["name"]))


# --- tasks known by the function they ran (Dask) --------------------------------------------


def task_record(name: str, wall_s: float, code: Any) -> dict[str, Any]:
    """One task as a worker records it (heatline/integrations/dask.py): its name (Dask's task
    prefix), its wall time, and ``code``, the code object of the function it ran (None for a
    task that only moves or aliases data)."""
    function = None
    if code is not None:
        function = [code.co_filename, getattr(code, "co_qualname", code.co_name),
                    code.co_firstlineno]
    return {"name": name, "wall_s": wall_s, "function": function}


def worker_tasks(profile: Profile, records: Sequence[dict[str, Any]]) -> list[Task]:
    """The `tasks` table of one worker from its task records: a task is found in the stacks
    by the function it ran (its file and qualified name, not its name: a Dask prefix need not
    be a function's name); where several names ran one function, its time is shared among
    them by their wall time. Otherwise as :func:`tasks_table`."""
    table: dict[str, Task] = {}
    walls: dict[tuple[str, str], dict[str, float]] = {}  # function -> {name: wall}
    found = {(function["qualname"], function["first_line"]): path
             for path, entry in profile["files"].items() for function in entry["functions"]}
    for record in records:
        row = table.get(record["name"])
        if row is None:
            row = table[record["name"]] = _empty(record["name"])
        row["count"] += 1
        row["wall_s"] += record["wall_s"]
        if record["function"] is not None:
            file, qualname, first_line = record["function"]
            if file not in profile["files"]:  # code cloudpickle rebuilt (<dynamic-code>)
                file = found.get((qualname, first_line), file)
            by_name = walls.setdefault((file, qualname), {})
            # a tiny floor: a name whose runs measured 0 s still gets a share
            by_name[record["name"]] = by_name.get(record["name"], 0.0) + record["wall_s"] + 1e-9
    shares = {key: {name: wall / sum(by_name.values()) for name, wall in by_name.items()}
              for key, by_name in walls.items()}
    lines: dict[str, dict[tuple[str, int], float]] = {name: {} for name in table}
    touched: dict[str, dict[tuple[str, int], float]] = {name: {} for name in table}
    frames = profile["stacks"]["frames"]
    for entry in profile["stacks"]["entries"]:
        stack = entry["stack"]
        depth = owners = None
        for depth, index in enumerate(stack):  # outermost first: the task's own frame
            frame = frames[index]
            if not frame.get("native") and frame.get("file"):
                owners = shares.get((frame["file"], frame["qualname"]))
                if owners is not None:
                    break
        if owners is None or depth is None:
            continue
        own = [frames[i] for i in stack[depth:] if not frames[i].get("native")
               and frames[i].get("file")]
        spent = sum(entry.get(key, 0.0) for key in (*_TIMES, "cpu_wait_s"))
        for name, share in owners.items():
            row = table[name]
            for key in _TIMES:
                row[key] += entry.get(key, 0.0) * share  # type: ignore[literal-required]
            for frame in own:
                place = (frame["file"], frame["line"])
                touched[name][place] = max(touched[name].get(place, 0.0), share)
            leaf = (own[-1]["file"], own[-1]["line"])
            lines[name][leaf] = lines[name].get(leaf, 0.0) + spent * share
    for name, row in table.items():
        row["alloc_bytes"] = _shared_alloc(profile, touched[name])
        row["lines"] = _top(lines[name])  # type: ignore[typeddict-item]
    return _ordered(table)


def summed(tables: Sequence[Sequence[Task]]) -> list[Task]:
    """The tables of several workers as one: each name's entries summed."""
    table: dict[str, Task] = {}
    lines: dict[str, dict[tuple[str, int], float]] = {}
    for rows in tables:
        for other in rows:
            row = table.get(other["name"])
            if row is None:
                row = table[other["name"]] = _empty(other["name"])
                lines[other["name"]] = {}
            for key in ("count", "wall_s", *_TIMES, "alloc_bytes"):
                row[key] += other[key]  # type: ignore[literal-required]
            for line in other["lines"]:
                place = (line["file"], line["line"])
                lines[other["name"]][place] = lines[other["name"]].get(place, 0.0) + line["time_s"]
    for name, row in table.items():
        row["lines"] = _top(lines[name])  # type: ignore[typeddict-item]
    return _ordered(table)


def _empty(name: str) -> Task:
    return {"name": name, "count": 0, "wall_s": 0.0,
            **{key: 0.0 for key in _TIMES},  # type: ignore[typeddict-item]
            "alloc_bytes": 0, "lines": []}


def _shared_alloc(profile: Profile, touched: dict[tuple[str, int], float]) -> int:
    total = 0.0
    for path, entry in profile["files"].items():
        for line in entry["lines"]:
            share = touched.get((path, line["line"]))
            if share:
                total += share * (line.get("alloc_python_bytes", 0)
                                  + line.get("alloc_native_bytes", 0))
    return int(total)


def _top(times: dict[tuple[str, int], float]) -> list[dict[str, Any]]:
    top = sorted(times.items(), key=lambda item: (-item[1], item[0]))[:TASK_LINES]
    return [{"file": file, "line": line, "time_s": round(seconds, 6)}
            for (file, line), seconds in top if seconds > 0]


def _ordered(table: dict[str, Task]) -> list[Task]:
    for row in table.values():
        for key in ("wall_s", *_TIMES):
            row[key] = round(row[key], 6)  # type: ignore[literal-required]
    return sorted(table.values(), key=lambda row: (-row["wall_s"], row["name"]))
