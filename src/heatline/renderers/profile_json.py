"""The profile itself, as JSON: the source of truth every other view is made from
(docs/profile-format.md); the one encoding is data/io.py's."""

from __future__ import annotations

from typing import Any

from heatline.data.io import encode


def render(profile: dict[str, Any], view: Any = None) -> bytes:
    """The profile file's bytes; ``view`` does not apply (the file keeps every figure)."""
    return encode(profile)
