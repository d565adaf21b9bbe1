"""Folded stacks (``a;b;c 123``) for flamegraph.pl, inferno and speedscope.

One line per distinct stack (per thread), root first; the value is the stack's time in
microseconds (an integer, as flamegraph.pl expects), python + native + system.
"""

from __future__ import annotations

import re
from typing import Any

from heatline.data.queries import frame_label, stacks, thread_name

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: the model imports typing
    from heatline.data.model import Profile

_UNSAFE = re.compile(r"[;\r\n\x00-\x1f]")


def _clean(label: str) -> str:
    # ';' separates frames and a line break ends the line: neither may appear in a name.
    return _UNSAFE.sub("_", label)


def folded(profile: Profile) -> dict[str, float]:
    """Folded stack -> seconds, the thread as the root frame."""
    frames = (profile.get("stacks") or {}).get("frames", [])
    result: dict[str, float] = {}
    for stack in stacks(profile):
        parts = [_clean(thread_name(profile, stack.thread))]
        parts += [_clean(frame_label(frames[index])) for index in stack.frames]
        key = ";".join(parts)
        result[key] = result.get(key, 0.0) + stack.total_s
    return result


def render(profile: Profile, view: Any = None) -> bytes:
    lines = []
    for key, seconds in folded(profile).items():
        micros = round(seconds * 1e6)
        if micros > 0:
            lines.append(f"{key} {micros}\n")
    return "".join(lines).encode()
