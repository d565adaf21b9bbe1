"""speedscope's file format (https://www.speedscope.app/file-format-schema.json).

One sampled profile per thread, unit seconds; each distinct stack is one sample weighted by
its time (python + native + system). Frames are (function, file, line), so a function shows
once per line it was seen on, as in py-spy's output.
"""

from __future__ import annotations

import json
from typing import Any

from heatline._version import __version__
from heatline.data.queries import stacks, thread_name

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: the model imports typing
    from heatline.data.model import Profile

SCHEMA = "https://www.speedscope.app/file-format-schema.json"


def to_dict(profile: Profile) -> dict[str, Any]:
    source = (profile.get("stacks") or {}).get("frames", [])
    frames: list[dict[str, Any]] = []
    index_of: dict[int, int] = {}
    per_thread: dict[int, tuple[list[list[int]], list[float]]] = {}
    for stack in stacks(profile):
        if stack.total_s <= 0 or not stack.frames:  # no frame but heatline's own
            continue
        sample = []
        for index in stack.frames:
            if index not in index_of:
                frame = source[index]
                index_of[index] = len(frames)
                frames.append(
                    {
                        "name": frame.get("qualname") or frame.get("name") or "?",
                        "file": frame.get("file", ""),
                        "line": int(frame.get("line", 0)),
                    }
                )
            sample.append(index_of[index])
        samples, weights = per_thread.setdefault(stack.thread, ([], []))
        samples.append(sample)
        weights.append(round(stack.total_s, 6))
    profiles = []
    for thread in sorted(per_thread):
        samples, weights = per_thread[thread]
        profiles.append(
            {
                "type": "sampled",
                "name": thread_name(profile, thread),
                "unit": "seconds",
                "startValue": 0,
                "endValue": round(sum(weights), 6),
                "samples": samples,
                "weights": weights,
            }
        )
    return {
        "$schema": SCHEMA,
        "shared": {"frames": frames},
        "profiles": profiles,
        "name": str(profile.get("program", "")),
        "activeProfileIndex": 0,
        "exporter": f"heatline@{__version__}",
    }


def render(profile: Profile, view: Any = None) -> bytes:
    return json.dumps(to_dict(profile), ensure_ascii=True).encode()
