"""One self-contained HTML report: no network, no external fonts or scripts.

The page's data is the profile reduced to what the page shows, embedded as JSON in a
``<script type="application/json">`` element with ``<``, ``>``, ``&`` and the JavaScript line
separators escaped, so no source text or path can end the element; the page's script builds
everything with ``textContent`` (never ``innerHTML``), so source text renders as text.
Size is bounded: the flame graph keeps the call-tree nodes worth at least 1/5000 of the time,
sparklines use the (already bounded) per-line timelines, and the timeline draws at most
MAX_REGION_BARS region spans and MAX_STEP_BARS steps (saying how many it left out).
"""

from __future__ import annotations

import json
from typing import Any

from heatline._version import __version__
from heatline.options import DEFAULT_THRESHOLD_PCT
from heatline.renderers import View
from heatline.data import native as native_report
from heatline.data.queries import (
    call_edges,
    calling_only,
    frame_label,
    inclusive_times,
    profiled_s,
    stacks,
    thread_name,
)

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: the model imports typing
    from heatline.data.model import LineRecord, Profile

MIN_NODE_SHARE = 1 / 5000
# The timeline's bars: the earliest region spans (the profile keeps at most 10000) and the
# first steps (plus every slow step after them).
MAX_REGION_BARS = 3000
MAX_STEP_BARS = 2000


# A thread is idle in the flame graph (hidden until the page's "show idle threads" box is ticked)
# when it ran (Python or native) or waited for a CPU to run less than this share of its sampled
# time: a queue feeder, a pool's result handler, a kernel's heartbeat. Their blocked time made
# a 10.6 s run's root 78.5 s (18 such threads at about 3 s each). The main process's main
# thread is always shown: its waiting is the story (a training loop starved by its DataLoader).
IDLE_RUNNING_SHARE = 0.05


def _thread_label(profile: Profile, index: int) -> str:
    """The thread's name; in a profile of several processes, with its process (pid, role)."""
    name = thread_name(profile, index)
    processes = profile.get("processes") or []
    threads = profile.get("threads", [])
    if len(processes) < 2 or not 0 <= index < len(threads):
        return name
    pid = threads[index].get("pid", processes[0]["pid"])
    role = next((p["role"] for p in processes if p["pid"] == pid), "child")
    return f"{name} of pid {pid} ({role})"


def _flame_tree(profile: Profile) -> list[Any]:
    """[label, seconds, children, [python_s, native_s, system_s, cpu_wait_s], idle] with, under
    the root,
    one node per process (in a profile of several processes: "pid 123 (DataLoader worker)"),
    then one per thread (``idle`` 1 on an idle thread's node, else 0), then the frames."""
    frames = (profile.get("stacks") or {}).get("frames", [])
    threads = profile.get("threads", [])
    processes = profile.get("processes") or []
    main_pid = processes[0]["pid"] if processes else None
    roles = {p["pid"]: p["role"] for p in processes}

    def new() -> dict[str, Any]:
        return {"v": 0.0, "k": [0.0, 0.0, 0.0, 0.0], "c": {}}

    root = new()
    for stack in stacks(profile):
        thread = threads[stack.thread] if 0 <= stack.thread < len(threads) else {}
        path = [thread_name(profile, stack.thread)]
        if len(processes) > 1:
            pid = thread.get("pid", main_pid)
            path.insert(0, f"pid {pid} ({roles.get(pid, 'child')})")
        path += [frame_label(frames[index]) for index in stack.frames]
        kinds = (stack.python_s, stack.native_s, stack.system_s, stack.cpu_wait_s)
        node = root
        for label in [None, *path]:
            if label is not None:
                node = node["c"].setdefault(label, new())
            node["v"] += stack.total_s
            node["k"] = [a + b for a, b in zip(node["k"], kinds)]
    limit = root["v"] * MIN_NODE_SHARE
    thread_depth = 2 if len(processes) > 1 else 1
    main_thread = next((thread_name(profile, i) for i, t in enumerate(threads)
                        if t.get("main") and "pid" not in t), None)

    def pack(label: str, node: dict[str, Any], depth: int, parent: str) -> list[Any]:
        children = [pack(k, v, depth + 1, label) for k, v in node["c"].items() if v["v"] >= limit]
        children.sort(key=lambda child: -child[1])
        idle = (depth == thread_depth and node["v"] > 0
                and not (label == main_thread and (thread_depth == 1 or
                                                   parent.startswith(f"pid {main_pid} ")))
                and node["k"][0] + node["k"][1] + node["k"][3] < IDLE_RUNNING_SHARE * node["v"])
        return [label, round(node["v"], 6), children, [round(k, 6) for k in node["k"]],
                int(idle)]

    return pack("all", root, 0, "")


def _line_row(line: LineRecord) -> list[Any]:
    return [
        line["line"],
        line.get("source", ""),
        line.get("python_pct", 0),
        line.get("native_pct", 0),
        line.get("system_pct", 0),
        line.get("alloc_python_bytes", 0) + line.get("alloc_native_bytes", 0),
        line.get("growth_bytes", 0),
        line.get("copy_bytes", 0),
        [point[1] for point in line.get("timeline", [])],
        line.get("gpu_s", 0),
        line.get("gpu_launches", 0),
        line.get("gpu_copy_bytes", 0),
        line.get("gpu_alloc_bytes", 0),
        line.get("cpu_wait_pct", 0),
    ]


def _gpu(profile: Profile) -> dict[str, Any] | None:
    """What the page shows of the profile's ``gpu`` object (as the terminal's GPU section),
    or None when GPU profiling was off."""
    gpu = profile.get("gpu") or {}
    if not gpu.get("enabled"):
        return None
    return {
        "summary": {key: gpu.get(key) for key in (
            "kernel_tracing", "gpu_s", "unattributed_gpu_s", "launches", "copy_h2d_bytes",
            "copy_d2h_bytes", "alloc_peak_bytes")},
        "devices": [[device.get("index"), device.get("name", ""),
                     device.get("utilisation_pct", 0), device.get("idle_share", 0),
                     device.get("peak_memory_used_bytes", 0), device.get("memory_total_bytes", 0),
                     device.get("utilisation_timeline", []), device.get("memory_timeline", [])]
                    for device in gpu.get("devices", [])],
        "kernels": [[kernel.get("name", ""), kernel.get("calls", 0), kernel.get("gpu_s", 0),
                     [[item.get("file"), item.get("line")] for item in kernel.get("lines", [])]]
                    for kernel in gpu.get("kernels", [])],
    }


def _native(profile: Profile, shown: int = 30) -> list[list[Any]]:
    """The top native functions over the whole program: [symbol, library, seconds, [[file,
    line, seconds], ...] (the lines whose native time went to it, most first; a thread without
    a Python thread state as [its name, None, seconds])]."""
    functions: dict[tuple[str, Any], list[Any]] = {}
    for path, entry in (profile.get("files") or {}).items():
        for line in entry.get("lines", []):
            for item in line.get("native_functions", ()):
                row = functions.setdefault((item["symbol"], item["library"]),
                                           [item["symbol"], item["library"], 0.0, []])
                row[2] += item["seconds"]
                row[3].append([path, line["line"], item["seconds"]])
    # threads without a Python thread state: under the thread, with no line
    for index, thread in enumerate(profile.get("threads", [])):
        for item in thread.get("native_functions", ()) if thread.get("python") is False else ():
            row = functions.setdefault((item["symbol"], item["library"]),
                                       [item["symbol"], item["library"], 0.0, []])
            row[2] += item["seconds"]
            row[3].append([thread_name(profile, index), None, item["seconds"]])
    # the functions past each list's top ("[other]") are no one function: last, whatever their
    # sum, under the name "other functions"
    other = functions.pop((native_report.OTHER, None), None)
    rows = sorted(functions.values(), key=lambda row: -row[2])[:shown]
    if other is not None:
        other[0:2] = [native_report.OTHER_LABEL, ""]  # in no one library
        rows.append(other)
    for row in rows:
        row[2] = round(row[2], 6)
        row[3] = sorted(row[3], key=lambda where: -where[2])[:5]
    return rows


def _peak(profile: Profile) -> dict[str, Any] | None:
    """When and where memory peaked, as the terminal's memory footer says it: the allocating
    line, or with child processes the combined peak's moment, the lines of every process
    holding memory then ([file, line, bytes, process]) and the main process's own peak."""
    at = profile.get("peak_at")
    combined = profile.get("combined_peak")
    if combined is None:
        return None if not at else {"t_s": at["t_s"], "file": at["file"], "line": at["line"]}
    roles = {p["pid"]: p["role"] for p in profile.get("processes", [])}
    own = profile.get("main_peak_at")
    return {
        "t_s": combined["t_s"],
        "lines": [[line["file"], line["line"], line["bytes"],
                   "main" if roles.get(line["pid"]) == "main"
                   else f"pid {line['pid']}, {roles.get(line['pid'], 'child')}"]
                  for line in combined["lines"]],
        "main": [profile.get("main_peak_bytes", 0), own and own["t_s"], own and own["file"],
                 own and own["line"]],
    }


def _timeline(profile: Profile) -> dict[str, Any] | None:
    """The regions' spans and the steps on one time axis (seconds since the start), or None
    when the profile has neither: ``lanes`` [[thread label, [[path, depth, start s, end s],
    ...]], ...] (the main thread first, then by first span), ``regions_left_out`` (spans not
    drawn: past MAX_REGION_BARS or not kept in the profile), ``steps`` [[number, start s,
    duration s, kind], ...] with kind 0 usual, 1 warm-up, 2 slow (summary.slow_steps'),
    ``steps_left_out`` and ``end_s`` (the latest end drawn)."""
    from heatline.data.summary import slow_steps

    spans = [(start, end, tid, region["path"]) for region in profile.get("regions") or []
             for tid, start, end in region.get("slices") or []]
    spans.sort()
    left_out = max(0, len(spans) - MAX_REGION_BARS) + sum(
        region.get("slices_dropped", 0) for region in profile.get("regions") or [])
    spans = spans[:MAX_REGION_BARS]
    steps = profile.get("steps") or {}
    started, durations = steps.get("started_s") or [], steps.get("durations_s") or []
    if not spans and not durations:
        return None
    warmup, slow, _ = slow_steps(durations)
    kinds = {**{index: 1 for index in warmup}, **{index: 2 for index in slow}}
    shown = [index for index in range(len(durations))
             if index < MAX_STEP_BARS or index in kinds]
    step_bars = [[index + 1, round(started[index], 6), round(durations[index], 6),
                  kinds.get(index, 0)] for index in shown if index < len(started)]
    # the main process's threads by their native id (a merged profile's slices are its)
    labels = {}
    for index, thread in enumerate(profile.get("threads", [])):
        if "pid" not in thread and thread.get("native_id") is not None:
            labels.setdefault(thread["native_id"], (not thread.get("main"),
                                                    _thread_label(profile, index)))
    lanes: dict[Any, list[Any]] = {}
    for start, end, tid, path in spans:
        lanes.setdefault(tid, []).append([path, path.count("/"), round(start, 6), round(end, 6)])
    order = sorted(lanes, key=lambda tid: (labels.get(tid, (True,))[0], lanes[tid][0][2]))
    ends = [end for _, end, _, _ in spans] + [bar[1] + bar[2] for bar in step_bars]
    return {
        "lanes": [[labels.get(tid, (True, f"thread {tid}"))[1], lanes[tid]] for tid in order],
        "regions_left_out": left_out,
        "steps": step_bars,
        "steps_left_out": len(durations) - len(step_bars),
        "end_s": round(max(ends, default=0.0), 6),
    }


def _segments(path: str) -> list[tuple[int, Any]]:
    """A module path's segments, sortable: numbers (a ModuleList's items) in numeric order."""
    return [(0, int(part), "") if part.isdigit() else (1, 0, part)
            for part in path.split(".")] if path else []


def _module_tree(profile: Profile) -> list[list[Any]]:
    """The modules as a tree, each after its parent (by root, then path segments): [path,
    class, root, calls, wall s, self s, python s, native s, system s, cpu_wait s, alloc
    bytes or None, depth], depth counting the recorded ancestors (a ModuleList that no one
    calls is no row, so its items are one level under the module holding it)."""
    modules = sorted(profile.get("modules") or [],
                     key=lambda m: (m["root"], _segments(m["path"])))
    rows: list[list[Any]] = []
    seen: dict[tuple[str, str], int] = {}
    for m in modules:
        parts = m["path"].split(".") if m["path"] else []
        depth = 0
        for cut in range(len(parts) - 1, -1, -1):  # the nearest recorded ancestor
            ancestor = (m["root"], ".".join(parts[:cut]))
            if ancestor in seen:
                depth = seen[ancestor] + 1
                break
        seen[(m["root"], m["path"])] = depth
        rows.append([m["path"], m["class"], m["root"], m["count"], m["wall_s"], m["self_s"],
                     m["python_s"], m["native_s"], m["system_s"], m["cpu_wait_s"],
                     m.get("alloc_bytes"), depth])
    return rows


def page_data(
    profile: Profile, threshold_pct: float = DEFAULT_THRESHOLD_PCT
) -> dict[str, Any]:
    """What the page shows; lines at or above ``threshold_pct`` of the time are highlighted."""
    inclusive = inclusive_times(profile)
    total = (profile.get("totals") or {}).get("attributed_s", 0) or 1.0
    # Waiting for a CPU gets its columns only where the run had some (an oversubscribed
    # machine): the rows of functions, threads and processes end with it then.
    waits = bool((profile.get("totals") or {}).get("cpu_wait_s"))
    files = []
    functions = []
    leaks = []
    for path, entry in (profile.get("files") or {}).items():
        files.append({"path": path, "pct": round(sum(entry.get(k, 0) for k in
                      ("python_pct", "native_pct", "system_pct", "cpu_wait_pct")), 3),
                      "lines": [_line_row(line) for line in entry.get("lines", [])]})
        for function in entry.get("functions", []):
            key = (path, function.get("qualname") or function.get("name"))
            functions.append([
                function.get("qualname") or function.get("name"), path,
                function.get("first_line", 0), function.get("python_pct", 0),
                function.get("native_pct", 0), function.get("system_pct", 0),
                round(100 * inclusive.get(key, 0.0) / total, 3),
                function.get("alloc_python_bytes", 0) + function.get("alloc_native_bytes", 0),
                function.get("copy_bytes", 0),
                *([function.get("cpu_wait_pct", 0)] if waits else []),
            ])
        for line in entry.get("lines", []):
            if line.get("leak"):
                leaks.append([path, line["line"], line.get("source", ""),
                              line["leak"].get("likelihood", 0),
                              line["leak"].get("growth_bytes_per_s", 0),
                              line.get("growth_bytes", 0)])
    leaks.sort(key=lambda leak: -leak[5])  # the most memory held first, as in the terminal
    for (path, qualname), line in calling_only(profile).items():  # callers without own time
        functions.append([qualname, path, line, 0, 0, 0,
                          round(100 * inclusive.get((path, qualname), 0.0) / total, 3), 0, 0,
                          *([0] if waits else [])])
    # [caller file, caller qualname, callee file, callee qualname, %]: the page matches a
    # function row [qualname, file, ...] against them.
    edges = [[a[0], a[1], b[0], b[1], round(100 * seconds / total, 3)]
             for (a, b), seconds in call_edges(profile).items() if seconds >= total * 1e-4]
    threads = [[_thread_label(profile, i), t.get("python_s", 0), t.get("native_s", 0),
                t.get("system_s", 0), t.get("unattributed_s", 0), t.get("cpu_s", 0),
                *([t.get("cpu_wait_s", 0)] if waits else [])]
               for i, t in enumerate(profile.get("threads", []))]
    # [pid, ppid, role, command line, exit, python s, native s, system s, CPU s, peak bytes,
    # (with waits) cpu_wait s]
    # Processes of several hosts (heatline merge): each role says on which.
    hosts = len({p.get("host") for p in profile.get("processes", [])}) > 1
    processes = [[p["pid"], p["ppid"],
                  f"{p['role']} on {p.get('host') or 'an unknown host'}" if hosts else p["role"],
                  " ".join(p.get("argv", [])), p["exit"],
                  p.get("python_s", 0), p.get("native_s", 0), p.get("system_s", 0),
                  p.get("cpu_s", 0), p.get("peak_bytes", 0),
                  *([p.get("cpu_wait_s", 0)] if waits else [])]
                 for p in profile.get("processes", [])]
    from heatline.data.summary import summarise

    return {
        "program": profile.get("program", ""),
        # The summary's sentences, worked out from this profile as the terminal report does.
        "findings": [[item["rule"], item["text"]] for item in summarise(profile)],
        "version": __version__,
        "hot_pct": threshold_pct,
        "cpu_wait": waits,
        "summary": {**{k: profile.get(k) for k in ("elapsed_s", "cpu_s", "samples", "peak_bytes",
                                                   "started_at", "python_version")},
                    "profiled_s": profiled_s(profile)},
        "files": files,
        "functions": functions,
        "edges": edges,
        "leaks": leaks,
        "threads": threads,
        "processes": processes,
        "memory_timeline": profile.get("memory_timeline", []),
        "peak": _peak(profile),
        "flame": _flame_tree(profile),
        "flame_thread_depth": 2 if len(profile.get("processes") or []) > 1 else 1,
        "gpu": _gpu(profile),
        # [path, count, wall s, python s, native s, system s, cpu_wait s]
        "regions": [[r["path"], r["count"], r["wall_s"], r["python_s"], r["native_s"],
                     r["system_s"], r["cpu_wait_s"]] for r in profile.get("regions", [])],
        # a distributed engine's tasks: name, runs, wall s, the split, MiB allocated
        "tasks": [[t["name"], t["count"], t["wall_s"], t["python_s"], t["native_s"],
                   t["system_s"], t.get("alloc_bytes", 0) / (1 << 20)]
                  for t in profile.get("tasks", [])],
        "timeline": _timeline(profile),
        "modules": _module_tree(profile),
        "native": _native(profile),
        "warnings": profile.get("warnings", []),
    }


def embed_json(data: Any) -> str:
    """JSON that cannot end a <script> element or open a comment inside it."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    for char, escape in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                         ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(char, escape)
    return text


def render(profile: Profile, view: View = View()) -> bytes:
    from heatline.renderers._html_page import PAGE

    data = page_data(profile, view.threshold_pct)
    return PAGE.replace("/*HEATLINE_DATA*/", embed_json(data), 1).encode()
