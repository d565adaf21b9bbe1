"""The profile dict (docs/profile-format.md) built from an engine snapshot
(docs/engine-api.md): per-line and per-function times and percentages, the listed source
lines, threads, stacks, warnings, the memory fields from memory.py and the GPU fields from
gpu.py. The snapshot already uses the profile's field names (snapshot.py turns its _ns fields
into seconds). Pure apart from reading source files, so it can be tested with synthetic
snapshots; never imports the engine."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence

from heatline._version import __version__
from heatline.data.snapshot import elided_frame, in_seconds, is_elided, place
from heatline.data.snapshot import periods as _periods
from heatline.data.snapshot import seconds as _seconds
from heatline.data.snapshot import timeline as _timeline
from heatline.data.summary import with_summary

# typing only for type checkers: a run's path imports none (heatline/__init__.py).
TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: importing typing costs every run about 4 ms
    from typing import Any
    from heatline.data.model import (
        Asyncio, FileRecord, FunctionRecord, LineRecord, Profile, Stacks, ThreadRecord, Totals,
    )

# A file's lines are listed only where they have time or memory, with this many lines of
# context either side (and the first line of each listed function), so the profile and the
# report grow with what was measured, never with the size of the program's source.
CONTEXT_LINES = 2
# Warn about time lost to unreadable stacks once it exceeds this share of the sampled time.
LOST_WARNING_FRACTION = 0.05
# Other threads' event loop waits are said to be charged as sampled from this much on.
ASYNCIO_OTHER_LOOP_WARNING_NS = 50_000_000
# Warn about threads waiting for heatline's lock once that exceeds this share of their time and
# ENGINE_WAIT_WARNING_INTERVALS sampling intervals. The waiting is charged to the line the
# thread was on, so it can move a line's figure by at most the time waited; a line's figure is
# a count of samples, one interval each, and a line of 100 samples is already uncertain by
# about sqrt(100) = 10 intervals. Less waiting than that is below what the report resolves
# (it fired on 3 ms of a short run, 5% of 60 ms of thread time).
ENGINE_WAIT_WARNING_FRACTION = 0.05
ENGINE_WAIT_WARNING_INTERVALS = 10
# Warn about the host's steal time once it exceeds this share of the machine's CPU time (and
# this many seconds: /proc/stat counts it in ticks).
STEAL_WARNING_FRACTION = 0.05
STEAL_WARNING_MIN_S = 0.25
# Points kept in the program's memory timeline in the profile.
PROGRAM_TIMELINE_POINTS = 200


class SourceLines:
    """A source file's lines (linecache's, with their line endings) read as lines without them,
    each stripped when it is read: the profile keeps only the lines with cost and their context
    (a few thousand of a large program's hundreds of thousands), and stripping every line cost
    a large program's end of run about 40 ms (bench/end_of_run.py)."""

    __slots__ = ("_lines",)

    def __init__(self, lines: list[str]) -> None:
        self._lines = lines

    def __len__(self) -> int:
        return len(self._lines)

    def __getitem__(self, index: int) -> str:
        return self._lines[index].rstrip("\r\n")


def read_source_lines(path: str) -> SourceLines:
    """The lines of a source file without line endings (empty if it cannot be read), as a
    sequence indexed from 0.

    linecache decodes with the file's PEP 263 encoding (via tokenize.open) and splits lines the
    way the compiler numbers them.
    """
    import linecache

    try:
        return SourceLines(linecache.getlines(path))
    except Exception:  # noqa: BLE001 -- an unreadable file must not cost the whole profile
        return SourceLines([])


def build_profile(
    snapshot: dict[str, Any],
    *,
    program: str,
    argv: Sequence[str],
    started_at: str,
    elapsed_s: float,
    cpu_s: float,
    sampling_interval_s: float,
    steal_s: float | None = None,
    cpu_count: int | None = None,
    read_lines: Callable[[str], Sequence[str]] = read_source_lines,
    fork_stack: Sequence[Sequence[Any]] | None = None,
    dynamic_sources: Sequence[str] = (),
    host: str | None = None,
    pid: int | None = None,
    start_epoch: float | None = None,
) -> Profile:
    """Turn an engine snapshot (docs/engine-api.md) into a profile (docs/profile-format.md).

    Pure apart from ``read_lines``, so it can be tested with synthetic snapshots. Each
    section is built by its own step below; the GPU fields (gpu.py) and the summary
    (summary.py) are added to the whole. ``fork_stack``: a fork child's inherited frames
    (run/follow.py); its time under them with no user frame of its own is its ``idle_s``
    (release_inherited). ``dynamic_sources``: the files where code cloudpickle rebuilt
    (``<dynamic-code>``) may come from, the main script first (charge_dynamic_code).
    ``host``, ``pid``, ``start_epoch``: where the process ran and when its time 0 was (Unix
    time), the profile's ``host``, ``pid`` and ``started_at_epoch`` (absent when not given)."""
    from heatline.data import gpu as gpu_report
    from heatline.data.labels import regions_and_modules
    from heatline.data import steps as step_report

    cpu_count = cpu_count or os.cpu_count() or 1
    idle_ns = None if fork_stack is None else release_inherited(snapshot, fork_stack)
    dynamic_warnings = (charge_dynamic_code(snapshot, dynamic_sources, read_lines)
                        if dynamic_sources else [])

    memory = snapshot.get("memory") or {"enabled": False, "lines": []}
    charges = _Charges(snapshot, memory, elapsed_s)
    attributed_ns = charges.attributed_ns()
    threads, unattributed_ns, other_threads = _threads(snapshot)
    interval_ns = snapshot.get("sampling_interval_ns") or sampling_interval_s * 1e9
    stack_table = _stacks(snapshot, snapshot["files"], snapshot["functions"], other_threads)
    steps, step_warnings = step_report.from_record(snapshot.get("steps"))
    profile = {
        **_run_fields(snapshot, program=program, argv=argv, started_at=started_at,
                      elapsed_s=elapsed_s, cpu_s=cpu_s, interval_ns=interval_ns,
                      steal_s=steal_s, cpu_count=cpu_count,
                      identity=_identity(host, pid, start_epoch)),
        **_profiled_periods(snapshot),
        **steps,
        **_asyncio_summary(snapshot),
        **({} if idle_ns is None else {"idle_s": _seconds(idle_ns)}),
        "totals": _totals(charges, attributed_ns, unattributed_ns),
        "threads": threads,
        "files": _files(charges, attributed_ns, elapsed_s, read_lines),
        "stacks": stack_table,
        **regions_and_modules(snapshot),
        **_memory_summary(memory, snapshot["files"]),
        "warnings": _all_warnings(snapshot, memory, stack_table, attributed_ns=attributed_ns,
                                  unattributed_ns=unattributed_ns, interval_ns=interval_ns,
                                  steal_s=steal_s, elapsed_s=elapsed_s, cpu_count=cpu_count)
        + dynamic_warnings + step_warnings,
    }
    return with_summary(gpu_report.with_gpu(profile, snapshot, read_lines))


# A stack's or a line's times, in order, as a thread record's keys (a snapshot without
# cpu_wait has the first three).
_TIME_NS_KEYS = ("python_ns", "native_ns", "system_ns", "cpu_wait_ns")


def release_inherited(snapshot: dict[str, Any], fork_stack: Sequence[Sequence[Any]]) -> int:
    """A fork child's time in library code under the frames it inherited from its parent,
    taken off the user line it was charged to; the ns taken (changes ``snapshot``).

    A fork child starts inside its parent's stack: every frame above the one that called
    fork stays suspended at the line it was on (that one goes on: multiprocessing's calls
    the process's bootstrap, which ends with os._exit), and the engine charges the child's
    time to the innermost user frame, which for a Pool or DataLoader worker waiting for a
    task in the library's worker loop is the parent's ``with Pool(...)`` or
    ``for batch in loader:`` line. The child never runs that line: that time is the
    worker's own, waiting for work or handing results back, and becomes its thread's
    unattributed time. Only stacks that still hold every inherited frame at its fork-time
    line (the frame that called fork in its function, at any line), with no user frame
    below them, are taken; a child whose fork was called from user code goes on in that
    frame, whose time stays its own. ``fork_stack``: (file, function name, line) per
    inherited frame, outermost first. The stacks taken keep only the child's own frames."""
    depth = len(fork_stack)
    files, functions = snapshot["files"], snapshot["functions"]
    if not depth or not snapshot["stacks"]:
        return 0

    def user(function_id: int) -> bool:
        return not is_elided(function_id) and bool(files[functions[function_id]["file"]]["user"])

    def inherited(frame: Sequence[int], expected: Sequence[Any], forked_here: bool) -> bool:
        function_id, line = frame
        if is_elided(function_id) or line != expected[2] and not forked_here:
            return False
        function = functions[function_id]
        path = files[function["file"]]["path"]
        return function["name"] == expected[1] and (
            path == expected[0] or path.endswith("/" + expected[0]))

    taken: dict[tuple[int, int, int], list[int]] = {}  # the line cell -> ns taken off it
    stack_cells: dict[int, tuple[int, int]] = {}  # stack id -> the (file, line) it was charged
    stacks = []
    for stack_id, (frames, thread, *times) in enumerate(snapshot["stacks"]):
        own = frames[depth:]
        if (len(frames) < depth or any(is_elided(f) or user(f) for f, _ in own)
                or not all(inherited(frames[i], fork_stack[i], i == depth - 1)
                           for i in range(depth))):
            stacks.append((frames, thread, *times))
            continue
        # Where the engine charged it: the innermost inherited user frame; the frame that
        # called fork being user code, the child goes on in it (an os.fork() of the program).
        at = next((i for i in range(depth - 1, -1, -1) if user(frames[i][0])), None)
        if at is None or at == depth - 1:
            stacks.append((frames, thread, *times))
            continue
        function_id, line = frames[at]
        cell = (functions[function_id]["file"], line, function_id)
        _add(taken.setdefault(cell, [0] * len(times)), times)
        stack_cells[stack_id] = cell[:2]
        record = snapshot["threads"][thread]
        for key, ns in zip(_TIME_NS_KEYS, times):
            record[key] = record.get(key, 0) - ns
            record["unattributed_ns"] += ns
        stacks.append((tuple(own) or tuple(frames[depth - 1:]), thread, *times))
    if not taken:
        return 0
    snapshot["stacks"] = stacks
    lines = []
    for file_id, line, function_id, *times in snapshot["lines"]:
        off = taken.get((file_id, line, function_id))
        if off is not None:
            times = [max(ns - by, 0) for ns, by in zip(times, off)]
        if any(times):
            lines.append((file_id, line, function_id, *times))
    snapshot["lines"] = lines
    native = snapshot.get("native")
    if native and native.get("enabled") and native.get("stacks"):
        # The native functions the taken stacks named leave their line with them.
        named: dict[tuple[int, int, int], int] = {}
        for stack_id, address, ns in native["stacks"]:
            if stack_id in stack_cells:
                key = (*stack_cells[stack_id], address)
                named[key] = named.get(key, 0) + ns
        cells = []
        for file_id, line, address, ns in native.get("lines", ()):
            ns -= min(ns, named.pop((file_id, line, address), 0))
            if ns:
                cells.append((file_id, line, address, ns))
        native["lines"] = cells
    return sum(sum(ns) for ns in taken.values())


# The file name cloudpickle gives every code object it pickles by value (a function of
# __main__, a lambda, a closure): joblib's loky workers run such functions.
DYNAMIC_CODE = "<dynamic-code>"
# How many lines past a function's first line (its first decorator) its `def` may be.
DEFINITION_LINES = 20


def charge_dynamic_code(snapshot: dict[str, Any], sources: Sequence[str],
                        read_lines: Callable[[str], Sequence[str]]) -> list[str]:
    """Charge the time of code cloudpickle rebuilt to its source lines (changes
    ``snapshot``); a warning for the time whose source was not found.

    cloudpickle pickles a function of ``__main__`` (or a lambda, a closure) by value and
    names its code's file ``<dynamic-code>``; name, qualname, first line and line numbers
    are the source's. The engine takes that file for no user code, so a loky worker running
    such a function charged none of its time to a line. Each such function is looked up in
    ``sources`` (the main script first): the first whose source defines it at its first
    line (``def NAME``, past decorators, or ``lambda``) is its file. A stack whose innermost
    such frame is deeper than its innermost user frame is charged to that frame's line
    instead (moved from the user line, or from the thread's unattributed time)."""
    files, functions = snapshot["files"], snapshot["functions"]
    if not any(f["path"] == DYNAMIC_CODE for f in files):
        return []
    file_ids = {f["path"]: i for i, f in enumerate(files)}
    resolved: dict[int, int] = {}  # a <dynamic-code> function id -> its copy in its file
    unresolved: set[int] = set()
    for function_id, function in enumerate(list(functions)):
        if files[function["file"]]["path"] != DYNAMIC_CODE:
            continue
        path = next((p for p in sources if _defines(read_lines(p), function)), None)
        if path is None:
            unresolved.add(function_id)
            continue
        if path not in file_ids:
            file_ids[path] = len(files)
            files.append({"path": path, "user": True})
        resolved[function_id] = len(functions)
        functions.append(dict(function, file=file_ids[path]))

    def user(function_id: int) -> bool:
        return not is_elided(function_id) and bool(files[functions[function_id]["file"]]["user"])

    moved: dict[tuple[int, int, int], list[int]] = {}  # line cell -> ns added (or taken: < 0)
    unfound_ns = 0
    stacks = []
    for frames, thread, *times in snapshot["stacks"]:
        dynamic = [i for i, (f, _) in enumerate(frames) if f in resolved or f in unresolved]
        charged = max((i for i, (f, _) in enumerate(frames) if user(f)), default=None)
        if not dynamic or charged is not None and charged > dynamic[-1]:
            stacks.append((frames, thread, *times))
            continue
        function_id, line = frames[dynamic[-1]]
        if function_id in unresolved:
            unfound_ns += sum(times)
            stacks.append((frames, thread, *times))
            continue
        target = resolved[function_id]
        _add(moved.setdefault((functions[target]["file"], line, target), [0] * len(times)),
             times)
        if charged is None:  # it was the thread's unattributed time
            record = snapshot["threads"][thread]
            record["unattributed_ns"] -= sum(times)
            for key, ns in zip(_TIME_NS_KEYS, times):
                record[key] = record.get(key, 0) + ns
        else:
            at, at_line = frames[charged]
            _add(moved.setdefault((functions[at]["file"], at_line, at), [0] * len(times)),
                 [-ns for ns in times])
        stacks.append((tuple((resolved.get(f, f), n) for f, n in frames), thread, *times))
    snapshot["stacks"] = stacks
    lines = []
    for file_id, line, function_id, *times in snapshot["lines"]:
        change = moved.pop((file_id, line, function_id), None)
        if change is not None:
            times = [max(ns + by, 0) for ns, by in zip(times, change)]
        lines.append((file_id, line, function_id, *times))
    lines += [(*cell, *times) for cell, times in moved.items() if any(ns > 0 for ns in times)]
    snapshot["lines"] = lines
    if not unfound_ns:
        return []
    return [f"{_seconds(unfound_ns):.3f} s ran in code cloudpickle rebuilt (file "
            f"{DYNAMIC_CODE}: a function sent by value, such as one of __main__ run by joblib's "
            "workers) whose source file was not found: charged to no line"]


def _defines(source: Sequence[str], function: dict[str, Any]) -> bool:
    """Whether ``source`` defines ``function`` (name, first line) at its first line."""
    first, name = function["first_line"], function["name"]
    if not 1 <= first <= len(source):
        return False
    if name == "<lambda>":
        return "lambda" in source[first - 1]
    for number in range(first, min(first + DEFINITION_LINES, len(source) + 1)):
        text = source[number - 1].strip()
        if text.startswith(("def ", "async def ", "class ")):
            return text.startswith((f"def {name}(", f"async def {name}(", f"class {name}(",
                                    f"class {name}:"))
    return False


class _Charges:
    """The engine's (file, line, function) cells summed per line and per function, with the
    native functions and memory fields of each line. Functions are keyed by what the user
    sees, (qualname, first line), so two code objects of one function merge."""

    __slots__ = ("functions", "line_ns", "line_function", "function_ns", "line_native",
                 "line_memory")

    def __init__(self, snapshot: dict[str, Any], memory: dict[str, Any],
                 elapsed_s: float) -> None:
        from heatline.data import memory as memory_report
        from heatline.data import native as native_report

        files = snapshot["files"]
        self.functions = snapshot["functions"]
        self.line_ns: dict[str, dict[int, list[int]]] = {}  # path -> line -> ns
        # (path, line) -> the key of the function its cost is charged to
        self.line_function: dict[tuple[str, int], tuple[str, int]] = {}
        # path -> function key -> {"name", "ns"}
        self.function_ns: dict[str, dict[tuple[str, int], dict[str, Any]]] = {}
        for file_id, line, function_id, *times in snapshot["lines"]:
            path = files[file_id]["path"]
            _add(self.line_ns.setdefault(path, {}).setdefault(line, [0, 0, 0, 0]), times)
            key = self.function_key(path, function_id)
            self.line_function.setdefault((path, line), key)
            _add(self.function_ns[path][key]["ns"], times)

        # path -> line -> {(symbol, library): ns}
        self.line_native: dict[str, dict[int, dict]] = {}
        for (file_id, number), cells in native_report.by_line(snapshot.get("native")).items():
            into = self.line_native.setdefault(files[file_id]["path"], {}).setdefault(number, {})
            for key, ns in cells.items():
                into[key] = into.get(key, 0) + ns

        # path -> line -> memory fields; a line that only allocated is listed too
        self.line_memory: dict[str, dict[int, dict[str, Any]]] = {}
        for record in memory["lines"] if memory.get("enabled") else ():
            path = files[record["file"]]["path"]
            fields = memory_report.line_fields(record, elapsed_s)
            self.line_memory.setdefault(path, {})[record["line"]] = fields
            self.line_ns.setdefault(path, {}).setdefault(record["line"], [0, 0, 0, 0])
            self.line_function.setdefault((path, record["line"]),
                                          self.function_key(path, record["function"]))

    def function_key(self, path: str, function_id: int) -> tuple[str, int]:
        """The key of the engine's function ``function_id`` in ``path``, its entry made."""
        function = self.functions[function_id]
        key = (function["qualname"], function["first_line"])
        self.function_ns.setdefault(path, {}).setdefault(
            key, {"name": function["name"], "ns": [0, 0, 0, 0]}
        )
        return key

    def attributed_ns(self) -> int:
        return sum(sum(ns) for lines in self.line_ns.values() for ns in lines.values())


_UNTIMED = {"python_s": 0.0, "native_s": 0.0, "system_s": 0.0, "cpu_wait_s": 0.0,
            "python_pct": 0.0, "native_pct": 0.0, "system_pct": 0.0, "cpu_wait_pct": 0.0}


def _timed(ns: Sequence[int], attributed_ns: int) -> dict[str, float]:
    """The time fields of a line, function or file from its [python, native, system,
    cpu_wait] ns."""
    if not any(ns):  # a context line: most of a large program's lines
        return _UNTIMED
    return {
        "python_s": _seconds(ns[0]),
        "native_s": _seconds(ns[1]),
        "system_s": _seconds(ns[2]),
        "cpu_wait_s": _seconds(ns[3]),
        "python_pct": _pct(ns[0], attributed_ns),
        "native_pct": _pct(ns[1], attributed_ns),
        "system_pct": _pct(ns[2], attributed_ns),
        "cpu_wait_pct": _pct(ns[3], attributed_ns),
    }


def _pct(ns: float, attributed_ns: int) -> float:
    """A share of all attributed time, in percent (docs/profile-format.md, Conventions)."""
    return round(ns * 100.0 / attributed_ns, 3) if attributed_ns else 0.0


def _files(charges: _Charges, attributed_ns: int, elapsed_s: float,
           read_lines: Callable[[str], Sequence[str]]) -> dict[str, FileRecord]:
    """The profile's ``files``: most time first, then most bytes allocated, then by path."""
    entries = []
    for path, lines in charges.line_ns.items():
        file_total = [sum(ns[i] for ns in lines.values()) for i in range(4)]
        memories = charges.line_memory.get(path, {})
        allocated = sum(
            m["alloc_python_bytes"] + m["alloc_native_bytes"] for m in memories.values()
        )
        entry = {
            **_timed(file_total, attributed_ns),
            "lines": _listed_lines(charges, path, attributed_ns, read_lines(path)),
            "functions": _function_list(charges, path, attributed_ns, elapsed_s),
        }
        entries.append((sum(file_total), allocated, path, entry))
    entries.sort(key=lambda item: (-item[0], -item[1], item[2]))
    return {path: entry for _, _, path, entry in entries}


def _listed_lines(charges: _Charges, path: str, attributed_ns: int,
                  source: Sequence[str]) -> list[LineRecord]:
    """A file's ``lines``: those with time or memory, CONTEXT_LINES either side of each, and
    the first line of each of its functions, by line number."""
    from heatline.data import memory as memory_report
    from heatline.data import native as native_report

    lines = charges.line_ns[path]
    memories = charges.line_memory.get(path, {})
    natives = charges.line_native.get(path, {})
    numbers = set(lines)
    for number in lines:
        low, high = max(1, number - CONTEXT_LINES), min(len(source), number + CONTEXT_LINES)
        numbers.update(range(low, high + 1))
    numbers.update(first for _, first in charges.function_ns[path] if 1 <= first <= len(source))
    line_list = []
    for number in sorted(numbers):
        text = source[number - 1] if 1 <= number <= len(source) else ""
        charged_to = charges.line_function.get((path, number))
        line_list.append(
            {
                "line": number,
                "source": text,
                "function": charged_to[0] if charged_to else None,
                **_timed(lines.get(number, (0, 0, 0, 0)), attributed_ns),
                **memories.get(number, memory_report.empty_fields()),
            }
        )
        if number in natives:
            functions_here = native_report.function_list(natives[number])
            if functions_here:
                line_list[-1]["native_functions"] = functions_here
    return line_list


def _function_list(charges: _Charges, path: str, attributed_ns: int,
                   elapsed_s: float) -> list[FunctionRecord]:
    """A file's ``functions``: each function's time, its lines' memory fields and native
    functions summed; most time first, then most bytes allocated."""
    from heatline.data import memory as memory_report
    from heatline.data import native as native_report

    memories = charges.line_memory.get(path, {})
    native_by_function: dict[tuple[str, int], dict] = {}  # key -> {(symbol, library): ns}
    for number, cells in charges.line_native.get(path, {}).items():
        into = native_by_function.setdefault(charges.line_function.get((path, number)), {})
        for key, ns in cells.items():
            into[key] = into.get(key, 0) + ns
    by_function: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for number, fields in memories.items():
        by_function.setdefault(charges.line_function[(path, number)], []).append(fields)
    function_list = [
        {
            "name": entry["name"],
            "qualname": qualname,
            "first_line": first_line,
            **_timed(entry["ns"], attributed_ns),
            **memory_report.function_fields(
                by_function.get((qualname, first_line), []), elapsed_s
            ),
        }
        for (qualname, first_line), entry in charges.function_ns[path].items()
    ]
    for function in function_list:
        cells = native_by_function.get((function["qualname"], function["first_line"]))
        listed = native_report.function_list(cells) if cells else []
        if listed:
            function["native_functions"] = listed
    function_list.sort(
        key=lambda f: (
            -_total(f),
            -f["alloc_python_bytes"] - f["alloc_native_bytes"],
            f["first_line"],
            f["qualname"],
        )
    )
    return function_list


def _threads(snapshot: dict[str, Any]
             ) -> tuple[list[ThreadRecord], int, list[dict[str, Any]]]:
    """The profile's ``threads``, the threads' unattributed time (ns), and the threads
    without a Python thread state (native.other_threads, each given its ``thread_index``).

    Those threads come after the Python ones, their CPU time unattributed (no line of the
    program ran it), with the native functions it went to. One whose id is a Python thread's
    is that thread before it had its thread state or after it gave it up (starting, ending, or
    a C thread calling into Python for a while): its time is that thread's, unattributed."""
    from heatline.data import native as native_report

    records = [dict(t) for t in snapshot["threads"]]
    python_index = {t["native_id"]: i for i, t in enumerate(records)}
    other_threads = native_report.other_threads(snapshot.get("native"))
    listed = []
    for other in other_threads:
        at = python_index.get(other["native_id"])
        if at is None:
            other["thread_index"] = len(records) + len(listed)
            listed.append(other)
        else:
            other["thread_index"] = at
            records[at]["unattributed_ns"] += other["cpu_ns"]
            records[at]["cpu_ns"] += other["cpu_ns"]
    # The names the shell read while the threads lived (engine/threadnames.py).
    names = {tid: name for tid, name in snapshot.get("thread_names", ())}
    threads = [_named({**in_seconds(t), "main": bool(t["main"])}, names) for t in records]
    for other in listed:
        record = {k: v for k, v in other.items()
                  if k not in ("functions", "unnamed_ns", "thread_index")}
        record["name"] = names.get(record["native_id"]) or record["name"]  # the last read
        if not record["name"]:
            del record["name"]
        threads.append({**in_seconds(record), "native_functions":
                        native_report.function_list(other["functions"])})
    unattributed_ns = sum(t["unattributed_ns"] for t in (*records, *listed))
    return threads, unattributed_ns, other_threads


def _named(thread: dict[str, Any], names: dict[int, str]) -> dict[str, Any]:
    """A Python thread's record with its ``name`` (the shell's: threading's, else the kernel's
    as last read) and ``comm`` (the engine's, when it first saw the thread), each where known,
    after ``main`` as the profile lists them."""
    comm = thread.pop("comm", "")  # engines before it: none
    record = {key: thread[key] for key in ("native_id", "main")}
    name = names.get(thread["native_id"]) or comm
    if name:
        record["name"] = name
    if comm:
        record["comm"] = comm
    return {**record, **thread}


def host_name() -> str:
    """This machine's host name, as socket.gethostname() gives it (without importing socket)."""
    try:
        return os.uname().nodename
    except AttributeError:  # no uname (Windows)
        import socket

        return socket.gethostname()


def _identity(host: str | None, pid: int | None, start_epoch: float | None) -> dict[str, Any]:
    """The profile's host, pid and started_at_epoch, those given."""
    return {
        **({} if host is None else {"host": host}),
        **({} if pid is None else {"pid": pid}),
        **({} if start_epoch is None else {"started_at_epoch": round(start_epoch, 6)}),
    }


def _run_fields(snapshot: dict[str, Any], *, program: str, argv: Sequence[str],
                started_at: str, elapsed_s: float, cpu_s: float, interval_ns: float,
                steal_s: float | None, cpu_count: int,
                identity: dict[str, Any]) -> dict[str, Any]:
    """The profile's fields about the run: what ran, where, when, and how it was sampled."""
    from heatline.data import SCHEMA_VERSION

    return {
        "schema_version": SCHEMA_VERSION,
        "heatline_version": __version__,
        "program": program,
        "argv": list(argv),
        # What platform.python_version() gives, without importing platform.
        "python_version": sys.version.split()[0],
        "platform": sys.platform,
        "cpu_count": cpu_count,
        "started_at": started_at,
        **identity,
        "elapsed_s": round(elapsed_s, 6),
        "cpu_s": round(cpu_s, 6),
        "sampling_interval_s": _seconds(interval_ns),
        "samples": snapshot["samples"],
        "sampled_s": _seconds(snapshot["sampled_ns"]),
        "lost_s": _seconds(snapshot["lost_ns"]),
        "max_sample_gap_s": _seconds(snapshot.get("max_sample_gap_ns", 0)),
        "max_tick_s": _seconds(snapshot.get("max_tick_ns", 0)),
        "long_gaps": snapshot.get("long_gaps", 0),
        "long_gap_s": _seconds(snapshot.get("long_gap_ns", 0)),
        **({} if steal_s is None else {"steal_s": round(steal_s, 6)}),
    }


def _totals(charges: _Charges, attributed_ns: int, unattributed_ns: int) -> Totals:
    totals_ns = [
        sum(ns[i] for lines in charges.line_ns.values() for ns in lines.values())
        for i in range(4)
    ]
    return {
        "python_s": _seconds(totals_ns[0]),
        "native_s": _seconds(totals_ns[1]),
        "system_s": _seconds(totals_ns[2]),
        "cpu_wait_s": _seconds(totals_ns[3]),
        "attributed_s": _seconds(attributed_ns),
        "unattributed_s": _seconds(unattributed_ns),
    }


def _all_warnings(snapshot: dict[str, Any], memory: dict[str, Any], stack_table: Stacks, *,
                  attributed_ns: int, unattributed_ns: int, interval_ns: float,
                  steal_s: float | None, elapsed_s: float, cpu_count: int) -> list[str]:
    """The profile's ``warnings`` (the GPU's are added with its fields), in this order."""
    from heatline.data import native as native_report

    return (
        _warnings(snapshot, attributed_ns, unattributed_ns, interval_ns)
        + _memory_warnings(memory)
        + _control_warnings(snapshot) + _steal_warnings(steal_s, elapsed_s, cpu_count)
        + native_report.warnings(snapshot.get("native"))
        + _cut_stack_warnings(stack_table) + _asyncio_warnings(snapshot)
    )


def _profiled_periods(snapshot: dict[str, Any]) -> dict[str, Any]:
    """When profiling was on (heatline.pause()/resume(), --off, heatline ctl), as
    [start_s, end_s] pairs since the start; absent from snapshots without the record."""
    periods = snapshot.get("profiled_periods")
    if periods is None:
        return {}
    fields = {"profiled_periods": _periods(periods)}
    if "profiled_was_paused" in snapshot:
        fields["paused"] = bool(snapshot["profiled_was_paused"])
    return fields


def _steal_warnings(steal_s: float | None, elapsed_s: float, cpu_count: int) -> list[str]:
    """A virtual machine whose host took its CPUs away: the threads held up look running from
    inside (the guest cannot see it), so their lines were charged that time as their own."""
    available_s = elapsed_s * max(cpu_count, 1)
    if steal_s is None or available_s <= 0 or steal_s < STEAL_WARNING_MIN_S:
        return []
    share = steal_s / available_s
    if share < STEAL_WARNING_FRACTION:
        return []
    return [
        f"the hypervisor took {steal_s:.2f} s of this machine's CPU time during the run (steal "
        f"time, {share * 100.0:.1f}% of its {cpu_count} CPUs): threads held up by it look "
        "running from inside the machine and were charged that time at their lines"
    ]


def _control_warnings(snapshot: dict[str, Any]) -> list[str]:
    warnings = []
    shown = len(snapshot.get("profiled_periods", []))
    if (
        snapshot.get("profiled_periods_dropped_changes")
        or snapshot.get("profiled_periods_count", 0) > shown
    ):
        warnings.append("profiling was paused and resumed too often to record every period: "
                        "profiled_periods lists the first ones only")
    return warnings


def _memory_summary(memory: dict[str, Any], files: list) -> dict[str, Any]:
    """The profile's top-level memory fields (docs/profile-format.md)."""
    from heatline.data import memory as memory_report

    if not memory.get("enabled"):
        return {
            "peak_bytes": 0,
            "peak_at": None,
            "memory_timeline": [],
            "memory": {"enabled": False},
        }
    timeline = memory_report.decimate(_timeline(memory["memory_timeline"]), PROGRAM_TIMELINE_POINTS)
    return {
        "peak_bytes": max(int(memory["peak_bytes"]), 0),
        "peak_at": place(memory["peak_at"], files),
        "memory_timeline": timeline,
        "memory": {
            "enabled": True,
            # the same names; what is live at the end never below 0
            **{key: max(int(memory[key]), 0) for key in memory_report.TOTAL_KEYS},
        },
    }


def _memory_warnings(memory: dict[str, Any]) -> list[str]:
    warnings = []
    if memory.get("enabled") and memory.get("untracked_samples"):
        warnings.append(
            f"{memory['untracked_samples']} sampled allocations could not be tracked (out of "
            "memory for the live table): their frees are not seen, so growth and leaks may be "
            "overstated"
        )
    if memory.get("enabled") and not memory.get("redirected_slots"):
        warnings.append(
            "native allocations and copies could not be intercepted (no library call sites "
            "were redirected): only Python allocations are measured"
        )
    return warnings


def _add(into: list[int], times: Sequence[int]) -> None:
    """Adds [python, native, system, cpu_wait] ns (a snapshot without cpu_wait: none)."""
    for i, ns in enumerate(times):
        into[i] += ns


def _total(entry: FileRecord | FunctionRecord | LineRecord) -> float:
    return entry["python_s"] + entry["native_s"] + entry["system_s"] + entry["cpu_wait_s"]


def _stacks(snapshot: dict[str, Any], files: list, functions: list,
            other_threads: Sequence[dict[str, Any]] = ()) -> Stacks:
    """Re-index the engine's (function id, line) frames into a shared frame table.

    A deep stack's elided middle is one marker frame for every stack of a thread with the same
    outer frames, giving the range of frames elided in them; stacks that differ only in how
    many frames were elided (a deep recursion seen at many depths) are then one entry. So a
    flame graph keeps one path through the marker instead of one per depth."""
    from heatline.data import native as native_report

    merged: dict[tuple[int, tuple[tuple[int, int], ...]], list[int]] = {}
    ranges: dict[tuple[int, tuple[tuple[int, int], ...]], list[int]] = {}
    keys = []  # the engine's stack id -> its merged key
    for stack, thread_index, *times in snapshot["stacks"]:
        shape = tuple((f, 0) if is_elided(f) else (f, line) for f, line in stack)
        keys.append((thread_index, shape))
        _add(merged.setdefault((thread_index, shape), [0, 0, 0, 0]), times)
        for at, (function_id, count) in enumerate(stack):
            if is_elided(function_id):
                seen = ranges.setdefault((thread_index, shape[: at + 1]), [count, count])
                seen[0], seen[1] = min(seen[0], count), max(seen[1], count)

    # The native functions under each stack (native frames): {(symbol, library): ns}.
    native_under = native_report.by_stack(snapshot.get("native"), keys)
    places = native_report.placements(snapshot.get("native"))

    frame_index: dict[Any, int] = {}
    frames: list[dict[str, Any]] = []
    entries = []
    for (thread_index, shape), (python_ns, native_ns, system_ns, wait_ns) in merged.items():
        indices = []
        for at, (function_id, line) in enumerate(shape):
            elided = is_elided(function_id)
            if elided:
                fewest, most = ranges[(thread_index, shape[: at + 1])]
            key = (function_id, fewest, most) if elided else (function_id, line, 0)
            index = frame_index.get(key)
            if index is None:
                index = frame_index[key] = len(frames)
                if elided:
                    frames.append(elided_frame(function_id, fewest, most))
                else:
                    function = functions[function_id]
                    frames.append(
                        {
                            "file": files[function["file"]]["path"],
                            "name": function["name"],
                            "qualname": function["qualname"],
                            "line": line,
                        }
                    )
            indices.append(index)
        # Native time the samples named goes one frame deeper, to a frame of that function.
        for (symbol, library), ns in native_under.get((thread_index, shape), {}).items():
            ns = min(ns, native_ns)
            if ns <= 0:
                continue
            key = ("native", symbol, library)
            index = frame_index.get(key)
            if index is None:
                index = frame_index[key] = len(frames)
                frames.append(native_report.frame(symbol, library, places.get((symbol, library))))
            native_ns -= ns
            entries.append({"stack": [*indices, index], "thread": thread_index, "python_s": 0.0,
                            "native_s": _seconds(ns), "system_s": 0.0, "cpu_wait_s": 0.0})
        entries.append(
            {
                "stack": indices,
                "thread": thread_index,
                "python_s": _seconds(python_ns),
                "native_s": _seconds(native_ns),
                "system_s": _seconds(system_ns),
                "cpu_wait_s": _seconds(wait_ns),
            }
        )
    # A thread without a Python thread state: one-frame stacks of its native functions; its
    # time no sample named has no frame to record (dropped, like a Python thread's frameless
    # time).
    dropped_ns = snapshot.get("stacks_dropped_ns", 0)
    for other in other_threads:
        thread_index = other["thread_index"]
        named_ns = 0
        for (symbol, library), ns in sorted(other["functions"].items(), key=lambda i: -i[1]):
            key = ("native", symbol, library)
            index = frame_index.get(key)
            if index is None:
                index = frame_index[key] = len(frames)
                frames.append(native_report.frame(symbol, library, places.get((symbol, library))))
            named_ns += ns
            entries.append({"stack": [index], "thread": thread_index, "python_s": 0.0,
                            "native_s": _seconds(ns), "system_s": 0.0, "cpu_wait_s": 0.0})
        dropped_ns += max(other["cpu_ns"] - named_ns, 0)
    return {
        "frames": frames,
        "entries": entries,
        "dropped_s": _seconds(dropped_ns),
    }


def _cut_stack_warnings(stack_table: Stacks) -> list[str]:
    """Stacks deeper than the engine keeps had their middle elided: how much time, how deep,
    and whether any function's inclusive time can miss some of it."""
    from heatline.data.queries import cut_stacks

    cut = cut_stacks({"stacks": stack_table})
    if not cut.seconds:
        return []
    share = 100.0 * cut.seconds / cut.total_s if cut.total_s else 0.0
    deepest = f"{cut.deepest}{'+' if cut.open_ended else ''}"
    text = (
        f"stacks deeper than {cut.kept} frames were cut for {cut.seconds:.3f} s of thread time "
        f"({share:.1f}% of the stacks' time; the deepest had {deepest} frames): each kept its "
        f"outermost {cut.outer} and innermost {cut.inner} frames, the middle elided"
    )
    if not cut.lost_s:
        return [text + "; every function among the elided frames was also among the kept ones, "
                "so every function's inclusive time is complete"]
    return [text + f"; in {cut.lost_s:.3f} s of it some elided functions were not among the kept "
            "ones: a function found only among elided frames misses up to that time from its "
            "inclusive time"]


def _asyncio_summary(snapshot: dict[str, Any]) -> dict[str, Asyncio]:
    """The profile's "asyncio" figures, present when an event loop was seen waiting: the main
    thread's loop waits, how much of them went to the awaits its tasks were suspended at (and
    of that, to the tasks each wait's end woke), and other threads' loop waits (charged where
    they were sampled)."""
    found = snapshot.get("asyncio") or {}
    if not found.get("loop_wait_ns") and not found.get("other_loop_wait_ns"):
        return {}
    return {"asyncio": {"loop_wait_s": _seconds(found.get("loop_wait_ns", 0)),
                        "await_s": _seconds(found.get("await_ns", 0)),
                        "woken_s": _seconds(found.get("woken_ns", 0)),
                        "other_loop_wait_s": _seconds(found.get("other_loop_wait_ns", 0))}}


def _asyncio_warnings(snapshot: dict[str, Any]) -> list[str]:
    found = snapshot.get("asyncio") or {}
    other_ns = found.get("other_loop_wait_ns", 0)
    if other_ns < ASYNCIO_OTHER_LOOP_WARNING_NS:
        return []
    return [f"an asyncio event loop on a thread other than the main one waited "
            f"{other_ns / 1e9:.3f} s: that time is charged to the line running the loop, not to "
            "the awaits its tasks were suspended at (heatline follows awaits on the main "
            "thread's loop only)"]


def _warnings(snapshot: dict[str, Any], attributed_ns: int, unattributed_ns: int,
              interval_ns: float) -> list[str]:
    warnings = []
    sampled_ns = snapshot["sampled_ns"]
    if snapshot["samples"] and not attributed_ns and unattributed_ns:
        warnings.append(
            "no time was spent in user code: all samples were in the standard library or "
            "installed packages (use --profile-all to include them)"
        )
    lost_ns = snapshot["lost_ns"]
    if sampled_ns and lost_ns > LOST_WARNING_FRACTION * sampled_ns:
        warnings.append(
            f"{lost_ns / 1e9:.3f} s of thread time ({lost_ns * 100.0 / sampled_ns:.1f}% of the "
            "sampled time) was lost because the stack could not be read"
        )
    threads_ns = sum(
        t.get(k, 0) for t in snapshot["threads"]
        for k in ("python_ns", "native_ns", "system_ns", "cpu_wait_ns", "unattributed_ns")
    )
    waited_ns = sum(t["engine_wait_ns"] for t in snapshot["threads"])
    if threads_ns and waited_ns > max(ENGINE_WAIT_WARNING_FRACTION * threads_ns,
                                      ENGINE_WAIT_WARNING_INTERVALS * interval_ns):
        warnings.append(
            f"threads waited {waited_ns / 1e9:.3f} s ({waited_ns * 100.0 / threads_ns:.1f}% of "
            "their time) for heatline's own lock, mostly while the machine was busy; that time "
            "is charged to their lines as what they were doing (per thread: engine_wait_s)"
        )
    error = (snapshot.get("cpu_wait") or {}).get("error", 0)
    if error:
        why = ("reads zeros (the kernel keeps no run-queue times: schedstats and delay accounting "
               "off; `sysctl kernel.sched_schedstats=1` turns them on)" if error < 0
               else f"could not be read ({os.strerror(error)})")
        warnings.append(
            f"waiting for a CPU was not measured: /proc/self/task/"
            f"{snapshot['cpu_wait'].get('tid', 0)}/schedstat {why}; a thread waiting for a CPU "
            "counts as running, so on a busy machine running time can exceed CPU time"
        )
    if snapshot.get("sampler_shared_descriptors"):
        warnings.append(
            "the system refused heatline's sampler thread a descriptor table of its own "
            "(close_range and unshare, e.g. by a seccomp profile), so it opened /proc files among "
            "the program's descriptors: a program that dup2()s onto a number it has not opened "
            "could get EBUSY, or lose that descriptor"
        )
    # Time with no Python frame to record (a thread starting or ending) is in dropped_s too, but
    # is no loss: only a full table (or no memory) is worth a warning.
    dropped_ns = snapshot.get("stacks_dropped_ns", 0) - snapshot.get("stacks_frameless_ns", 0)
    if dropped_ns:
        warnings.append(
            f"the stack table was full: {dropped_ns / 1e9:.3f} s of time is missing from 'stacks' "
            "(line and function times are complete)"
        )
    return warnings
