"""Sizes and durations as people write them in budgets: ``"500MB"``, ``"200 MB"``, ``"1.5GiB"``,
``"30s"``, ``"250ms"``, ``"2m"``. Used by ``heatline check`` and the pytest plugin's limits.

Sizes follow the report, which prints MB as 10^6 bytes: ``KB``/``MB``/``GB``/``TB`` (and ``K``,
``M``, ``G``, ``T``) are powers of 1000, ``KiB``/``MiB``/``GiB``/``TiB`` powers of 1024; a bare
number is bytes. Durations: ``ns``, ``us``, ``ms``, ``s``, ``m``/``min``, ``h``; a bare number is
seconds. Case does not matter; a space may separate the number and the unit. Numbers given as
int or float (from a TOML or JSON budget) are taken as bytes or seconds.

Imports nothing: the CLI imports it before the program runs.
"""

from __future__ import annotations

import math
from typing import Union

Number = Union[int, float, str]

_SIZE_UNITS = {
    "": 1, "b": 1,
    "k": 10**3, "kb": 10**3, "m": 10**6, "mb": 10**6, "g": 10**9, "gb": 10**9,
    "t": 10**12, "tb": 10**12,
    "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
}
_DURATION_UNITS = {
    "": 1.0, "s": 1.0, "sec": 1.0, "ns": 1e-9, "us": 1e-6, "ms": 1e-3,
    "m": 60.0, "min": 60.0, "h": 3600.0,
}


def _split(text: str) -> tuple[float, str]:
    text = text.strip().lower()
    end = len(text)
    while end and not (text[end - 1].isdigit() or text[end - 1] == "."):
        end -= 1
    number, unit = text[:end].strip(), text[end:].strip()
    value = float(number)  # ValueError for "", "abc", "1.2.3"
    return value, unit


def _parse(value: Number, units: dict, what: str, example: str) -> float:
    problem = f"not a {what} (e.g. {example}): {value!r}"
    if isinstance(value, bool):
        raise ValueError(problem)
    if isinstance(value, (int, float)):
        number, scale = float(value), 1.0
    elif isinstance(value, str):
        try:
            number, unit = _split(value)
        except ValueError:
            raise ValueError(problem) from None
        if unit not in units:
            raise ValueError(problem)
        number, scale = number, float(units[unit])
    else:
        raise ValueError(problem)
    result = number * scale
    if not (math.isfinite(result) and result >= 0):
        raise ValueError(problem)
    return result


def parse_size(value: Number) -> int:
    """Bytes in ``value``: ``"500MB"`` -> 500000000, ``"64 KiB"`` -> 65536, ``1024`` -> 1024.
    Raises ValueError (a one-line message) for anything else, negatives included."""
    result = _parse(value, _SIZE_UNITS, "size", "500MB, 64KiB or 1048576")
    if result >= 2**63:
        raise ValueError(f"size too large: {value!r}")
    return int(round(result))


def parse_duration(value: Number) -> float:
    """Seconds in ``value``: ``"30s"`` -> 30.0, ``"250ms"`` -> 0.25, ``"2m"`` -> 120.0,
    ``1.5`` -> 1.5. Raises ValueError (a one-line message) for anything else."""
    return _parse(value, _DURATION_UNITS, "duration", "30s, 250ms or 2m")


def format_size(size: float) -> str:
    """``612345678`` -> ``"612.3 MB"``, as the report writes sizes (powers of 1000)."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if abs(size) >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{int(size)} B"


def format_duration(seconds: float) -> str:
    """``31.25`` -> ``"31.25 s"``, ``0.0123`` -> ``"12.3 ms"``."""
    if abs(seconds) < 1:
        return f"{seconds * 1000:.3g} ms"
    return f"{seconds:.2f} s"
