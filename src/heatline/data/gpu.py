"""The GPU fields of the profile (docs/profile-format.md, "GPU"), from the engine snapshot's
"gpu" part (gpu.c), which uses the same names (snapshot.py turns its _ns fields into seconds).
Runs once per profile, after the CPU and memory fields are built."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from heatline.data.snapshot import in_seconds, place
from heatline.data.snapshot import seconds as _seconds

# typing only for type checkers: a run's path imports none (heatline/__init__.py).
TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: importing typing costs every run about 4 ms
    from typing import Any
    from heatline.data.model import GpuFields, GpuOn, Profile

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


_EMPTY = {key: 0.0 if key == "gpu_s" else 0 for key in LINE_KEYS}


def empty_fields() -> GpuFields:
    """The GPU fields of a line or function that launched nothing."""
    return dict(_EMPTY)


def _line_fields(record: dict[str, Any]) -> GpuFields:
    """A line's GPU fields from its engine record: the same names, gpu_ns in seconds, and the
    copies in every direction summed into gpu_copy_bytes."""
    fields = in_seconds(record)
    fields["gpu_copy_bytes"] = sum(
        record[f"gpu_copy_{direction}_bytes"] for direction in ("h2d", "d2h", "other")
    )
    return {key: fields[key] for key in LINE_KEYS}


def _add_fields(into: dict[str, Any], fields: dict[str, Any]) -> None:
    for key in LINE_KEYS:
        into[key] = into.get(key, 0) + fields[key]
    into["gpu_s"] = round(into["gpu_s"], 6)


def with_gpu(
    profile: Profile,
    snapshot: dict[str, Any],
    read_lines: Callable[[str], Sequence[str]],
) -> Profile:
    """Add the GPU fields to a profile built from ``snapshot``: per line and function, the
    top-level ``gpu`` object and the GPU warnings. Returns ``profile`` (changed in place)."""
    from heatline.data import memory as memory_report

    gpu = snapshot.get("gpu") or {}
    files = snapshot["files"]
    functions = snapshot["functions"]
    for entry in profile["files"].values():
        for line in entry["lines"]:
            line.update(_EMPTY)  # numbers only: shared, never changed in place
        for function in entry["functions"]:
            function.update(_EMPTY)
    profile["warnings"].extend(gpu.get("warnings", []))
    if not gpu.get("enabled"):
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


def gpu_fields(gpu: dict[str, Any], files: list) -> GpuOn:
    """The top-level ``gpu`` object of the profile from the snapshot's ``gpu`` part."""
    from heatline.data import memory as memory_report

    def launcher(key: Any) -> dict[str, Any]:
        if key is None:
            return {"file": None, "line": None}
        return {"file": files[key[0]]["path"], "line": key[1]}

    devices = []
    for d in map(in_seconds, gpu["devices"]):
        samples = d["samples"]
        devices.append(
            {
                "index": d["index"],
                "name": d["name"],
                "memory_total_bytes": d["memory_total_bytes"],
                "samples": samples,
                "utilisation_pct": round(d["utilisation_pct_sum"] / samples, 3) if samples else 0.0,
                "idle_share": round(d["idle_samples"] / samples, 4) if samples else 0.0,
                "peak_memory_used_bytes": d["peak_memory_used_bytes"],
                "peak_memory_t_s": d["peak_memory_t_s"],
                **{
                    key: memory_report.decimate(d[key], TIMELINE_POINTS)
                    for key in ("utilisation_timeline", "memory_timeline")
                },
            }
        )
    kernels = sorted(gpu["kernels"], key=lambda k: (-k["gpu_ns"], k["raw_name"]))[:MAX_KERNELS]
    lines = [_line_fields(record) for record in gpu["lines"]]
    unattributed_s = _seconds(gpu["unattributed_gpu_ns"])
    return {
        "enabled": True,
        "kernel_tracing": bool(gpu["kernel_tracing"]),
        "devices": devices,
        "gpu_s": round(sum(line["gpu_s"] for line in lines) + unattributed_s, 6),
        "unattributed_gpu_s": unattributed_s,
        "launches": sum(line["gpu_launches"] for line in lines),
        "copy_h2d_bytes": sum(line["gpu_copy_h2d_bytes"] for line in lines),
        "copy_d2h_bytes": sum(line["gpu_copy_d2h_bytes"] for line in lines),
        "alloc_peak_bytes": max(int(gpu["alloc_peak_bytes"]), 0),
        "alloc_peak_at": place(gpu["alloc_peak_at"], files),
        "records": gpu["records"],
        "dropped_records": gpu["dropped_records"],
        "kernels": [
            {
                "name": k["name"],
                "raw_name": k["raw_name"],
                "calls": k["calls"],
                "gpu_s": k["gpu_s"],
                "lines": [
                    {**launcher(key), "calls": calls, "gpu_s": _seconds(ns)}
                    for key, calls, ns in sorted(k["lines"], key=lambda item: -item[2])
                ],
                "other_lines_calls": k["other_lines_calls"],
                "other_lines_gpu_s": k["other_lines_gpu_s"],
            }
            for k in map(in_seconds, kernels)
        ],
    }
