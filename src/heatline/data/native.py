"""Native frames in the profile: which C functions a line's native time went to.

The engine gives, per line id, the time charged to each sampled instruction address, and for
each address its function and library (docs/design-engine.md, "Native frames"); a line's
``native_functions`` list sums those by (symbol, library), largest first
(docs/profile-format.md).
"""

from __future__ import annotations


# typing only for type checkers: a run's path imports none (heatline/__init__.py).
TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: importing typing costs every run about 4 ms
    from typing import Any

# A line's list keeps this many functions; the rest is summed into one "[other]" entry.
MAX_FUNCTIONS = 20
UNKNOWN = "[unknown]"
OTHER = "[other]"
# How the reports name the "[other]" entry: the functions summed past a list's top.
OTHER_LABEL = "other functions"

# The interpreter's bytecode evaluation (the eval loop, its parts the compiler split off such
# as `.cold`, the pushing and popping of a Python call's frame, 3.14's tail-called instruction
# bodies, the specializer it runs): a sample there is
# the thread running bytecode, Python time, not a native function (interpreter_free).
_INTERPRETER_PREFIXES = ("_PyEval_EvalFrame", "_PyEvalFrame", "_TAIL_CALL_", "_Py_Specialize_")


def is_interpreter(symbol: str, library: str | None) -> bool:
    """Whether (symbol, library) is the interpreter evaluating bytecode: one of its evaluation
    functions, in libpython or a python executable that has the interpreter linked in. Other
    functions of libpython (list_sort, PyObject_Malloc, dict lookups) are native work."""
    if not library or not symbol.startswith(_INTERPRETER_PREFIXES):
        return False
    base = library.rsplit("/", 1)[-1]
    return base.startswith(("libpython", "python"))


def interpreter_free(cells: dict[tuple[str, str | None], int]
                     ) -> dict[tuple[str, str | None], int]:
    """A line's (or stack's) {(symbol, library): ns} with the interpreter's samples left out
    and their time split among the others in proportion. The samples a tick splits its native
    time among cover the whole interval since the previous tick, in which the thread may also
    have run bytecode (this line's or the lines it alternates with): that is Python time, which
    the ticks that found the thread running bytecode already counted, so it names no native
    function. The line's native time, measured by the ticks, is unchanged; it goes to its
    native functions only. A cell of only interpreter samples gives {} (its native time
    unnamed)."""
    kept = {key: ns for key, ns in cells.items() if not is_interpreter(*key)}
    if len(kept) == len(cells):
        return cells
    named = sum(kept.values())
    if named <= 0:
        return {}
    total = sum(cells.values())
    return {key: ns * total // named for key, ns in kept.items()}


def by_line(native: dict[str, Any] | None) -> dict[tuple[int, int], dict]:
    """(file id, line) -> {(symbol, library): ns} from the snapshot's "native" record."""
    result: dict[tuple[int, int], dict[tuple[str, str | None], int]] = {}
    if not native or not native.get("enabled"):
        return result
    addresses = native["addresses"]
    for file_id, number, address, ns in native["lines"]:
        cell = result.setdefault((file_id, number), {})
        key = tuple(addresses[address])
        cell[key] = cell.get(key, 0) + ns
    return {where: cells for where, cells in
            ((where, interpreter_free(cells)) for where, cells in result.items()) if cells}


def by_stack(native: dict[str, Any] | None, keys: list) -> dict[Any, dict]:
    """Merged stack key -> {(symbol, library): ns}, from the snapshot's per-stack record
    (``keys`` maps the engine's stack ids to the keys data/build.py merges stacks by)."""
    result: dict[Any, dict[tuple[str, str | None], int]] = {}
    if not native or not native.get("enabled"):
        return result
    addresses = native["addresses"]
    for stack_id, address, ns in native.get("stacks", ()):
        cell = result.setdefault(keys[stack_id], {})
        key = tuple(addresses[address])
        cell[key] = cell.get(key, 0) + ns
    return {where: cells for where, cells in
            ((where, interpreter_free(cells)) for where, cells in result.items()) if cells}


def other_threads(native: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The threads without a Python thread state that used CPU (a BLAS pool, a C library's own
    thread), from the snapshot's "other_threads": each as the engine's thread records are
    ({native_id, main, *_ns}), its CPU time unattributed (it ran no line), plus ``python``:
    false, ``name`` and ``comm`` (the kernel's name for it: such a thread has no other; the
    reports call it after its busiest function's library too, queries.thread_name),
    ``functions`` ({(symbol, library): ns}) and ``unnamed_ns``."""
    if not native or not native.get("enabled"):
        return []
    addresses = native["addresses"]
    cells: dict[int, dict[tuple[str, str | None], int]] = {}
    for index, address, ns in native.get("other_charges", ()):
        cell = cells.setdefault(index, {})
        key = tuple(addresses[address])
        cell[key] = cell.get(key, 0) + ns
    threads = []
    for index, (tid, comm, cpu_ns, unnamed_ns) in enumerate(native.get("other_threads", ())):
        if cpu_ns <= 0:
            continue
        functions = cells.get(index, {})
        threads.append({
            "native_id": tid, "main": False, "python": False, "name": comm, "comm": comm,
            "python_ns": 0, "native_ns": 0, "system_ns": 0, "cpu_wait_ns": 0,
            "unattributed_ns": cpu_ns,
            "cpu_ns": cpu_ns, "engine_wait_ns": 0, "unnamed_ns": unnamed_ns,
            "functions": functions,
        })
    return threads


def placements(native: dict[str, Any] | None) -> dict[tuple[str, str | None], dict[str, Any]]:
    """(symbol, library) -> where the function was in the run: ``address``, the instruction
    address its samples charged the most time to, and the mapping of its library that held it
    (``mapping_start``, ``mapping_limit``, ``mapping_offset``, ``build_id`` when known), from
    the snapshot's "places" and "mappings" (engines before them: {})."""
    if not native or not native.get("enabled") or "places" not in native:
        return {}
    addresses, places, mappings = native["addresses"], native["places"], native["mappings"]
    by_address: dict[int, int] = {}
    for record in ("lines", "stacks", "other_charges"):
        for *_, address, ns in native.get(record, ()):
            by_address[address] = by_address.get(address, 0) + ns
    best: dict[tuple[str, str | None], tuple[int, int]] = {}
    for address, ns in by_address.items():
        key = tuple(addresses[address])
        if key not in best or (ns, -address) > (best[key][1], -best[key][0]):
            best[key] = (address, ns)
    result = {}
    for key, (address, _) in best.items():
        mapping, ip = places[address]
        place: dict[str, Any] = {"address": ip}
        if mapping is not None:
            start, end, offset, _library, build_id = mappings[mapping]
            place.update(mapping_start=start, mapping_limit=end, mapping_offset=offset)
            if build_id:
                place["build_id"] = build_id
        result[key] = place
    return result


def frame(symbol: str, library: str | None, place: dict[str, Any] | None = None
          ) -> dict[str, Any]:
    """A native function as a frame of the profile's stack table: ``native`` marks it, ``file``
    is its library's path ("" for anonymous memory); ``place`` (placements()) adds where it
    was in memory."""
    return {"file": library or "", "name": symbol, "qualname": symbol, "line": 0, "native": True,
            **(place or {})}


def function_list(cells: dict[tuple[str, str | None], float], in_seconds: bool = False
                  ) -> list[dict[str, Any]]:
    """The profile's list from {(symbol, library): time}, largest first, at most MAX_FUNCTIONS
    entries; the rest, and an "[other]" cell already in ``cells`` (lists merged), summed into
    one "[other]" entry, always last."""
    ranked = sorted(((key, value) for key, value in cells.items() if key[0] != OTHER),
                    key=lambda item: (-item[1], item[0][0], item[0][1] or ""))
    kept = ranked[:MAX_FUNCTIONS]
    rest = ranked[MAX_FUNCTIONS:] + [(key, value) for key, value in cells.items()
                                     if key[0] == OTHER]
    scale = 1.0 if in_seconds else 1e-9
    entries = [
        {"symbol": symbol, "library": library, "seconds": round(value * scale, 6)}
        for (symbol, library), value in kept
    ]
    if rest:
        entries.append({"symbol": OTHER, "library": None,
                        "seconds": round(sum(value for _, value in rest) * scale, 6)})
    return [entry for entry in entries if entry["seconds"] > 0]


def merged(one: list[dict[str, Any]], other: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Two lines' lists summed (child processes merged into one profile)."""
    cells: dict[tuple[str, str | None], float] = {}
    for entry in (*one, *other):
        key = (entry["symbol"], entry["library"])
        cells[key] = cells.get(key, 0.0) + entry["seconds"]
    return function_list(cells, in_seconds=True)


def library_name(path: str | None) -> str:
    """A library's short name for a report: libopenblas.so.0 -> libopenblas; an extension
    module without its ABI tag: _multiarray_umath.cpython-311-x86_64-linux-gnu.so ->
    _multiarray_umath."""
    if not path:
        return "anonymous"
    base = path.rsplit("/", 1)[-1]
    for tag in (".cpython-", ".abi3.", ".pypy"):
        if tag in base:
            return base.split(tag, 1)[0]
    return base.split(".so", 1)[0] if ".so" in base else base


def warnings(native: dict[str, Any] | None) -> list[str]:
    """Why native frames are missing, and how to get them."""
    if not native or not native.get("enabled") or not native.get("threads_without"):
        return []
    threads = native["threads_without"]
    which = f"{threads} thread{'s' if threads != 1 else ''}"
    if native.get("reason") == "shared_descriptors":
        return [f"native functions are not shown for {which}: the sampler thread has no "
                "descriptor table of its own to keep its sampling events in"]
    import os

    error = native.get("error") or 0
    why = os.strerror(error) if error else "refused"
    return [
        f"native functions are not shown for {which}: perf_event_open was refused ({why}); "
        "allow it with `sysctl kernel.perf_event_paranoid=2` (or lower), in a container "
        "with `--cap-add PERFMON` or a seccomp profile that permits perf_event_open "
        "(native time is still charged to its lines)"
    ]
