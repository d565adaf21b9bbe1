"""Regions and modules: the profile's ``regions`` and ``modules`` from the engine's labels
(snapshot["labels"]: docs/engine-api.md; engine/labels.py names them).

The engine keeps a tree of label nodes: a node is a path of labels entered one inside the
other on some thread (the same path on two threads is one node), with its count and wall time
(entered to exited, summed over its entries), and the samples charged to it while it was the
innermost label open on the sampled thread. Regions and modules interleave on that tree (a
record_function inside a module's forward, a module called inside a region); here:

- a region's path is the names of the regions along its node's chain ("step/forward"); its
  sampled times are those of the node's whole subtree (inclusive: nested regions and modules
  included), and its top lines likewise;
- a module is its instance (root class, path in the root); inclusive wall and sampled times
  as a region's, and ``self_s``: its wall minus the wall of the modules called inside it;
- memory, for both: ``alloc_bytes``, the sampled allocations made inside (the subtree's sum),
  and ``peak_bytes``, the program's highest footprint reached by one of them (the subtree's
  highest): the program's peak is in the region or module whose allocation reached it.
Nodes with the same region path or the same module are merged (threads, and the places a
module is called from).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

TOP_LINES = 5
# A profile keeps the earliest this many region slices (a Chrome trace's spans), all regions
# together; a region says how many of its own were left out.
MAX_SLICES = 10000
_CATEGORIES = ("python_s", "native_s", "system_s", "cpu_wait_s")


def _s(ns: float) -> float:
    return round(ns / 1e9, 9)


def regions_and_modules(snapshot: dict[str, Any]) -> dict[str, Any]:
    """{"regions": [...], "modules": [...]}: each key only when it has an entry."""
    raw = snapshot.get("labels")
    if not raw or not raw.get("nodes"):
        return {}
    names = [tuple(name) for name in raw["names"]]
    nodes = raw["nodes"]
    charges = raw.get("charges") or []
    files = snapshot.get("files") or []
    n = len(nodes)
    children: list[list[int]] = [[] for _ in range(n)]
    for index, (parent, *_rest) in enumerate(nodes):
        if parent is not None:
            children[parent].append(index)
    # each node's subtree: its own charges plus its descendants' (parents come before
    # children: a node is made when its parent is already open)
    # (python, native, system, cpu_wait ns, alloc bytes, peak bytes); older engines: the first 4
    subtree = [[*charges[i], 0, 0][:6] if i < len(charges) else [0] * 6 for i in range(n)]
    for index in range(n - 1, -1, -1):
        parent = nodes[index][0]
        if parent is not None:
            for k in range(5):
                subtree[parent][k] += subtree[index][k]
            subtree[parent][5] = max(subtree[parent][5], subtree[index][5])
    lines: list[dict[tuple[str, int], int]] = [{} for _ in range(n)]
    for node, file_id, line, ns in raw.get("lines") or []:
        if file_id is None or node >= n:
            continue
        key = (files[file_id]["path"] if file_id < len(files) else "?", line)
        lines[node][key] = lines[node].get(key, 0) + ns
    for index in range(n - 1, -1, -1):
        parent = nodes[index][0]
        if parent is not None:
            into = lines[parent]
            for key, ns in lines[index].items():
                into[key] = into.get(key, 0) + ns

    def label(index: int) -> tuple[str, ...]:
        name = nodes[index][1]
        return names[name] if name < len(names) else ("?", "?")

    regions: dict[str, dict[str, Any]] = {}
    modules: dict[tuple[str, str], dict[str, Any]] = {}
    region_path: list[str | None] = [None] * n
    for index in range(n):
        parent, _, count, wall_ns, dropped = nodes[index]
        kind, *rest = label(index)
        outer = region_path[parent] if parent is not None else None
        if kind != "region":
            region_path[index] = outer
        else:
            name = rest[0]
            path = name if outer is None else f"{outer}/{name}"
            region_path[index] = path
            entry = regions.setdefault(path, {"name": name, "path": path, "count": 0,
                                              "wall_ns": 0, "ns": [0] * 6, "lines": {},
                                              "slices": [], "slices_dropped": 0})
            _add(entry, count, wall_ns, subtree[index], lines[index])
            entry["slices_dropped"] += dropped
        if kind == "module":
            root, path, cls = rest
            if _inside_itself(index, nodes, label):
                entry = modules[(root, path)]
                entry["count"] += count  # its time is in the outer call's already
                continue
            entry = modules.setdefault((root, path), {
                "path": path, "class": cls, "root": root, "count": 0, "wall_ns": 0,
                "child_wall_ns": 0, "ns": [0] * 6, "lines": {}})
            _add(entry, count, wall_ns, subtree[index], {})
            entry["child_wall_ns"] += sum(nodes[c][3] for c in _child_modules(index, children,
                                                                              label))
    _add_slices(raw, region_path, label, regions)
    result: dict[str, Any] = {}
    # nodes of an earlier session of this process, not entered in this one
    regions = {k: e for k, e in regions.items() if e["count"] or e["wall_ns"] or any(e["ns"])}
    modules = {k: e for k, e in modules.items() if e["count"] or e["wall_ns"] or any(e["ns"])}
    if regions:
        result["regions"] = sorted((_region(e) for e in regions.values()),
                                   key=lambda r: (-r["wall_s"], r["path"]))
    if modules:
        result["modules"] = sorted((_module(e) for e in modules.values()),
                                   key=lambda m: (-m["wall_s"], m["root"], m["path"]))
    return result


def _add_slices(raw: dict[str, Any], region_path: list[str | None], label: Any,
                regions: dict[str, dict[str, Any]]) -> None:
    """Each region's spans, [thread native id, start_s, end_s] since the session started, the
    earliest MAX_SLICES of all regions kept (those the engine did not keep are counted by it)."""
    origin = raw.get("origin_ns") or 0
    kept = 0
    for node, tid, start_ns, end_ns in sorted(raw.get("slices") or [], key=lambda s: s[2]):
        if node >= len(region_path) or label(node)[0] != "region":
            continue
        entry = regions.get(region_path[node] or "")
        if entry is None:
            continue
        if kept >= MAX_SLICES:
            entry["slices_dropped"] += 1
            continue
        kept += 1
        entry["slices"].append([tid, _s(max(start_ns - origin, 0)), _s(max(end_ns - origin, 0))])


def _add(entry: dict[str, Any], count: int, wall_ns: int, ns: list[int],
         lines: dict[tuple[str, int], int]) -> None:
    entry["count"] += count
    entry["wall_ns"] += wall_ns
    for k in range(5):
        entry["ns"][k] += ns[k]
    entry["ns"][5] = max(entry["ns"][5], ns[5])
    for key, value in lines.items():
        entry["lines"][key] = entry["lines"].get(key, 0) + value


def _inside_itself(index: int, nodes: list[Any], label: Any) -> bool:
    """Whether the same module is open outside this node (a module calling itself)."""
    own = label(index)
    parent = nodes[index][0]
    while parent is not None:
        if label(parent) == own:
            return True
        parent = nodes[parent][0]
    return False


def _child_modules(index: int, children: list[list[int]], label: Any) -> list[int]:
    """The module nodes first met below ``index`` (through regions, not through modules)."""
    found, todo = [], list(children[index])
    while todo:
        child = todo.pop()
        if label(child)[0] == "module":
            found.append(child)
        else:
            todo.extend(children[child])
    return found


def _times(ns: list[int]) -> dict[str, Any]:
    """The sampled times, and the memory (alloc_bytes, peak_bytes)."""
    return {**dict(zip(_CATEGORIES, (_s(v) for v in ns[:4]))),
            "alloc_bytes": int(ns[4]), "peak_bytes": max(int(ns[5]), 0)}


def _region(entry: dict[str, Any]) -> dict[str, Any]:
    top = sorted(entry["lines"].items(), key=lambda item: (-item[1], item[0]))[:TOP_LINES]
    return {"name": entry["name"], "path": entry["path"], "count": entry["count"],
            "wall_s": _s(entry["wall_ns"]), **_times(entry["ns"]),
            "top_lines": [{"file": path, "line": line, "time_s": _s(ns)}
                          for (path, line), ns in top],
            "slices": entry["slices"], "slices_dropped": entry["slices_dropped"]}


def _module(entry: dict[str, Any]) -> dict[str, Any]:
    return {"path": entry["path"], "class": entry["class"], "root": entry["root"],
            "count": entry["count"], "wall_s": _s(entry["wall_ns"]),
            "self_s": _s(max(entry["wall_ns"] - entry["child_wall_ns"], 0)),
            **_times(entry["ns"])}


def merged(profile: dict[str, Any], other: dict[str, Any]) -> dict[str, Any]:
    """``profile``'s regions and modules with ``other``'s (another process's) added: regions
    by path, modules by (root, path); new lists, the inputs unchanged. A region's slices stay
    the first profile's (each process's own are in its own profile, on its own clock)."""
    result: dict[str, Any] = {}
    for key, fields in (("regions", ("path",)), ("modules", ("root", "path"))):
        rows = [dict(row) for row in profile.get(key, [])]
        by_key = {tuple(row[f] for f in fields): row for row in rows}
        for row in other.get(key, []):
            into = by_key.get(tuple(row[f] for f in fields))
            if into is None:
                by_key[tuple(row[f] for f in fields)] = into = dict(row)
                if "slices" in into:
                    into["slices_dropped"] = row["slices_dropped"] + len(row["slices"])
                    into["slices"] = []
                continue
            if "slices" in row:
                into["slices_dropped"] += row["slices_dropped"] + len(row["slices"])
            into["count"] += row["count"]
            for name in ("wall_s", "self_s", *_CATEGORIES):
                if name in into:
                    into[name] = round(into[name] + row.get(name, 0.0), 9)
            # bytes: allocations add up; peaks are each process's own, the highest kept
            into["alloc_bytes"] = into.get("alloc_bytes", 0) + row.get("alloc_bytes", 0)
            into["peak_bytes"] = max(into.get("peak_bytes", 0), row.get("peak_bytes", 0))
            if "top_lines" in into:
                into["top_lines"] = _merged_lines(into["top_lines"], row.get("top_lines", []))
        if by_key:
            result[key] = sorted(by_key.values(), key=lambda r: (-r["wall_s"], *(
                r[f] for f in fields)))
    return result


def _merged_lines(lines: list[dict[str, Any]], others: list[dict[str, Any]]
                  ) -> list[dict[str, Any]]:
    by_line: dict[tuple[str, int], float] = {}
    for row in (*lines, *others):
        key = (row["file"], row["line"])
        by_line[key] = by_line.get(key, 0.0) + row["time_s"]
    top = sorted(by_line.items(), key=lambda item: (-item[1], item[0]))[:TOP_LINES]
    return [{"file": path, "line": line, "time_s": round(t, 9)} for (path, line), t in top]
