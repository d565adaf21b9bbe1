"""The Trace Event format (JSON object form) for Perfetto and chrome://tracing.

heatline samples into totals, so there is no per-sample timeline of what ran when: the trace
shows what has a time axis in the profile, the program's live memory (``memory_timeline``) and
the live memory of the ten lines that held the most (their ``timeline``), as counter ("C")
tracks, plus one complete ("X") event per thread spanning the run with its time split in
``args``; and each region's spans (``regions``' slices), as complete events on the track of
the thread that entered it. With GPU profiling, each device's utilisation and memory in use
(NVML, device-wide) are counter tracks too, and ``otherData.gpu`` holds the GPU totals and
top kernels. The program's training steps (``steps``) are a track of their own: one complete
event per step, from its start to its end, on a pseudo-thread named "training steps" (tid 0).
``otherData`` says so in words.
"""

from __future__ import annotations

import json
import os
from typing import Any

from heatline._version import __version__
from heatline.data.queries import thread_name

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: the model imports typing
    from heatline.data.model import Profile

PID = 1
TOP_LINES = 10
STEPS_TID = 0  # the steps' track: no thread of the program has native id 0


def to_dict(profile: Profile) -> dict[str, Any]:
    events: list[dict[str, Any]] = [
        {"name": "process_name", "ph": "M", "pid": PID, "tid": 0,
         "args": {"name": f"heatline: {profile.get('program', '')}"}},
    ]
    elapsed_us = float(profile.get("elapsed_s", 0)) * 1e6
    for index, thread in enumerate(profile.get("threads", [])):
        tid = int(thread.get("native_id") or index + 1)
        events.append({"name": "thread_name", "ph": "M", "pid": PID, "tid": tid,
                       "args": {"name": thread_name(profile, index)}})
        events.append({"name": "profiled (totals, not a timeline)", "cat": "heatline", "ph": "X",
                       "ts": 0, "dur": elapsed_us, "pid": PID, "tid": tid,
                       "args": {key: thread.get(key, 0) for key in
                                ("python_s", "native_s", "system_s", "cpu_wait_s",
                                 "unattributed_s", "cpu_s")}})
    for region in profile.get("regions", []):
        for tid, start_s, end_s in region.get("slices", []):
            events.append({"name": region["name"], "cat": "region", "ph": "X",
                           "ts": float(start_s) * 1e6,
                           "dur": max(float(end_s) - float(start_s), 0.0) * 1e6,
                           "pid": PID, "tid": int(tid), "args": {"path": region["path"]}})
    events.extend(_step_events(profile))
    for t_s, value in profile.get("memory_timeline", []):
        events.append({"name": "program live memory", "cat": "memory", "ph": "C",
                       "ts": float(t_s) * 1e6, "pid": PID, "args": {"bytes": value}})
    lines = []
    for path, entry in (profile.get("files") or {}).items():
        for line in entry.get("lines", []):
            if line.get("timeline"):
                lines.append((line.get("peak_bytes", 0), path, line))
    lines.sort(key=lambda item: -item[0])
    for _, path, line in lines[:TOP_LINES]:
        name = f"live memory {os.path.basename(path)}:{line['line']}"
        for t_s, value in line["timeline"]:
            events.append({"name": name, "cat": "memory", "ph": "C", "ts": float(t_s) * 1e6,
                           "pid": PID, "args": {"bytes": value}})
    gpu = profile.get("gpu") or {}
    for device in gpu.get("devices", []) if gpu.get("enabled") else []:
        label = f"GPU {device.get('index', 0)}"
        for key, name, unit in (("utilisation_timeline", "utilisation", "percent"),
                                ("memory_timeline", "memory used", "bytes")):
            for t_s, value in device.get(key, []):
                events.append({"name": f"{label} {name}", "cat": "gpu", "ph": "C",
                               "ts": float(t_s) * 1e6, "pid": PID, "args": {unit: value}})
    other = {}
    if gpu.get("enabled"):
        other["gpu"] = {
            **{key: gpu.get(key) for key in ("kernel_tracing", "gpu_s", "unattributed_gpu_s",
                                             "launches", "copy_h2d_bytes", "copy_d2h_bytes",
                                             "alloc_peak_bytes")},
            "kernels": [{key: kernel.get(key) for key in ("name", "calls", "gpu_s")}
                        for kernel in gpu.get("kernels", [])[:TOP_LINES]],
        }
    return {
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": {
            "exporter": f"heatline {__version__}",
            "program": profile.get("program", ""),
            "started_at": profile.get("started_at", ""),
            "note": "heatline keeps totals, not a per-sample timeline: the counter tracks are "
            "the memory timelines (the program's and its top lines'); each thread's single "
            "span covers the whole run and carries its python/native/system seconds in args; "
            "GPU devices' utilisation and memory in use are counter tracks when GPU profiling "
            "was on (device-wide, all processes); the program's training steps, when it marked "
            "any, are spans on the 'training steps' track, timed exactly at each mark.",
            **other,
        },
    }


def _step_events(profile: Profile) -> list[dict[str, Any]]:
    """The steps' track: a name, then one span per step (args: its number, its seconds, and
    whether the --steps window had profiling on for it)."""
    steps = profile.get("steps")
    if not steps or not steps.get("durations_s"):
        return []
    source = "Optimizer.step()" if steps.get("source") == "optimizer" else "heatline.step()"
    events: list[dict[str, Any]] = [
        {"name": "thread_name", "ph": "M", "pid": PID, "tid": STEPS_TID,
         "args": {"name": f"training steps ({source})"}}]
    window = steps.get("window")
    for number, (start, duration) in enumerate(
            zip(steps["started_s"], steps["durations_s"]), start=1):
        args: dict[str, Any] = {"step": number, "duration_s": duration}
        if window is not None:
            args["profiled"] = window[0] <= number <= window[1]
        events.append({"name": f"step {number}", "cat": "steps", "ph": "X",
                       "ts": float(start) * 1e6, "dur": float(duration) * 1e6, "pid": PID,
                       "tid": STEPS_TID, "args": args})
    return events


def render(profile: Profile, view: Any = None) -> bytes:
    return json.dumps(to_dict(profile), ensure_ascii=True).encode()
