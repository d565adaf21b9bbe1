"""The GPU fields of the profile (docs/profile-format.md, "GPU"), from the engine snapshot's
"gpu" part (gpu.c). Runs once per profile, after the CPU and memory fields are built."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

# Kernels listed in the profile's kernels table (the most expensive first).
MAX_KERNELS = 50
# Points kept in each device timeline.
TIMELINE_POINTS = 200

LINE_KEYS = (
    "gpu_s",
    "gpu_launches",
    "gpu_copy_bytes",
    "gpu_copy_h2d_bytes",
    "gpu_copy_d2h_bytes",
    "gpu_alloc_bytes",
)


# The time fields of a line, function or file where no sample landed.
_NO_TIME = {f"{c}_{u}": 0.0 for c in ("python", "native", "system") for u in ("s", "pct")}


def empty_fields() -> dict[str, Any]:
    """The GPU fields of a line or function that launched nothing."""
    return {key: 0.0 if key == "gpu_s" else 0 for key in LINE_KEYS}


def _seconds(ns: float) -> float:
    return round(ns / 1e9, 6)


def _line_fields(record: dict[str, Any]) -> dict[str, Any]:
    return {
        "gpu_s": _seconds(record["gpu_ns"]),
        "gpu_launches": int(record["launches"]),
        "gpu_copy_bytes": int(record["copy_h2d"] + record["copy_d2h"] + record["copy_other"]),
        "gpu_copy_h2d_bytes": int(record["copy_h2d"]),
        "gpu_copy_d2h_bytes": int(record["copy_d2h"]),
        "gpu_alloc_bytes": int(record["alloc"]),
    }


def _add_fields(into: dict[str, Any], fields: dict[str, Any]) -> None:
    for key in LINE_KEYS:
        into[key] = into.get(key, 0) + fields[key]
    into["gpu_s"] = round(into["gpu_s"], 6)


def with_gpu(
    profile: dict[str, Any],
    snapshot: dict[str, Any],
    read_lines: Callable[[str], list[str]],
) -> dict[str, Any]:
    """Add the GPU fields to a profile built from ``snapshot``: per line and function, the
    top-level ``gpu`` object and the GPU warnings. Returns ``profile`` (changed in place)."""
    from heatline.profile import memory as memory_report

    gpu = snapshot.get("gpu") or {}
    files = snapshot["files"]
    functions = snapshot["functions"]
    for entry in profile["files"].values():
        for line in entry["lines"]:
            line.update(empty_fields())
        for function in entry["functions"]:
            function.update(empty_fields())
    profile["warnings"].extend(gpu.get("warnings", []))
    if not gpu.get("nvml"):
        profile["gpu"] = {"enabled": False}
        return profile

    def where(key: Any) -> tuple[str, int] | None:
        return None if key is None else (files[key[0]]["path"], key[1])

    for record in gpu["lines"]:
        path, number = where(record["line"])
        fields = _line_fields(record)
        entry = profile["files"].get(path)
        if entry is None:  # a file where no sample landed: listed for its GPU work
            entry = profile["files"][path] = {
                **_NO_TIME,
                "lines": [],
                "functions": [],
            }
        line = next((item for item in entry["lines"] if item["line"] == number), None)
        if line is None:
            source = read_lines(path)
            line = {
                "line": number,
                "source": source[number - 1] if 1 <= number <= len(source) else "",
                **_NO_TIME,
                **memory_report.empty_fields(),
                **empty_fields(),
            }
            entry["lines"].append(line)
            entry["lines"].sort(key=lambda item: item["line"])
        line.update(fields)
        function = functions[record["line"][2]]
        target = next(
            (
                item
                for item in entry["functions"]
                if (item["qualname"], item["first_line"])
                == (function["qualname"], function["first_line"])
            ),
            None,
        )
        if target is None:
            target = {
                "name": function["name"],
                "qualname": function["qualname"],
                "first_line": function["first_line"],
                **_NO_TIME,
                **memory_report.function_fields([], profile["elapsed_s"]),
                **empty_fields(),
            }
            entry["functions"].append(target)
        _add_fields(target, fields)

    profile["gpu"] = gpu_fields(gpu, files)
    return profile


def gpu_fields(gpu: dict[str, Any], files: list) -> dict[str, Any]:
    """The top-level ``gpu`` object of the profile from the snapshot's ``gpu`` part."""
    from heatline.profile import memory as memory_report

    def place(key: Any) -> dict[str, Any] | None:
        return None if key is None else {"file": files[key[0]]["path"], "line": key[1]}

    def timeline(points: list) -> list[list[float]]:
        seconds = memory_report.timeline_seconds(points)
        return [[t, v] for t, v in memory_report.decimate(seconds, TIMELINE_POINTS)]

    devices = []
    for d in gpu["devices"]:
        samples = d["samples"]
        devices.append(
            {
                "index": d["index"],
                "name": d["name"],
                "memory_total_bytes": d["memory_total"],
                "samples": samples,
                "utilisation_pct": round(d["util_sum"] / samples, 3) if samples else 0.0,
                "idle_share": round(d["idle_samples"] / samples, 4) if samples else 0.0,
                "peak_memory_used_bytes": d["used_peak"],
                "peak_memory_t_s": _seconds(d["used_peak_t_ns"]),
                "utilisation_timeline": timeline(d["util_timeline"]),
                "memory_timeline": timeline(d["used_timeline"]),
            }
        )
    kernels = sorted(gpu["kernels"], key=lambda k: (-k["ns"], k["name"]))[:MAX_KERNELS]
    lines = [_line_fields(record) for record in gpu["lines"]]
    peak_at = place(gpu["alloc_peak_line"])
    if peak_at is not None:
        peak_at["t_s"] = _seconds(gpu["alloc_peak_t_ns"])
    return {
        "enabled": True,
        "kernel_tracing": bool(gpu["cupti"]),
        "devices": devices,
        "gpu_s": round(sum(line["gpu_s"] for line in lines) + _seconds(gpu["unmatched_ns"]), 6),
        "unattributed_gpu_s": _seconds(gpu["unmatched_ns"]),
        "launches": sum(line["gpu_launches"] for line in lines),
        "copy_h2d_bytes": sum(line["gpu_copy_h2d_bytes"] for line in lines),
        "copy_d2h_bytes": sum(line["gpu_copy_d2h_bytes"] for line in lines),
        "alloc_peak_bytes": max(int(gpu["alloc_peak"]), 0),
        "alloc_peak_at": peak_at,
        "records": gpu["records"],
        "dropped_records": gpu["dropped_records"],
        "kernels": [
            {
                "name": k["demangled"],
                "raw_name": k["name"],
                "calls": k["calls"],
                "gpu_s": _seconds(k["ns"]),
                "lines": [
                    {
                        **(place(key) or {"file": None, "line": None}),
                        "calls": calls,
                        "gpu_s": _seconds(ns),
                    }
                    for key, calls, ns in sorted(k["lines"], key=lambda item: -item[2])
                ],
                "other_lines_calls": k["other_lines_calls"],
                "other_lines_gpu_s": _seconds(k["other_lines_ns"]),
            }
            for k in kernels
        ],
    }
