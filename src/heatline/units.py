"""Sizes and durations as people write them ("200 MB", "1.5GiB", "512k", "30s", "2m"): the one
parser for --memory-sampling-window, the pytest plugin's budgets and `heatline check` (whose
per-line limits, FILE:LINE=SIZE, are read here too).

Sizes are binary, as in --memory-sampling-window since the start and as every size heatline
prints (MiB, GiB: format_size and the reports): K, KB and KiB all mean 1024
bytes (M: 1024², G: 1024³, T: 1024⁴); case does not matter, spaces around the unit are allowed,
and a bare number is bytes. Durations are seconds unless they end in ms, s, m or h.
Imports nothing; errors are ValueError with a message fit to follow "must be ...".
"""

from __future__ import annotations

_SIZE_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
_TIME_UNITS = (("ms", 1e-3), ("s", 1.0), ("m", 60.0), ("h", 3600.0))


def parse_size(text: str | int | float) -> int:
    """Bytes from a size: ``512``, ``"512k"``, ``"200 MB"``, ``"1.5GiB"``. Raises ValueError."""
    if isinstance(text, bool):
        raise ValueError(f"a size in bytes (e.g. 512K, 200 MB, 1.5GiB), not {text!r}")
    if isinstance(text, (int, float)):
        number, scale = str(text), 1
    else:
        number = str(text).strip().lower()
        for suffix in ("ib", "b"):  # KiB, KB, MB, B
            if number.endswith(suffix):
                number = number[: -len(suffix)].rstrip()
                break
        scale = 1
        if number[-1:] in _SIZE_UNITS and number[-1:]:
            number, scale = number[:-1].rstrip(), _SIZE_UNITS[number[-1]]
    try:
        value = float(number) * scale
        result = int(value)
    except (ValueError, OverflowError):  # OverflowError: inf, 1e400
        raise ValueError(f"a size in bytes (e.g. 512K, 200 MB, 1.5GiB), not {text!r}") from None
    if not 0 <= value < 1 << 63:  # also rejects nan
        raise ValueError(f"a size from 0 bytes to 8 EiB, not {text!r}")
    return result


def parse_seconds(text: str | int | float) -> float:
    """Seconds from a duration: ``2.5``, ``"2.5"``, ``"250ms"``, ``"30s"``, ``"2m"``, ``"1h"``."""
    if isinstance(text, bool):
        raise ValueError(f"a duration (e.g. 2.5, 250ms, 30s, 2m), not {text!r}")
    number, scale = str(text).strip().lower(), 1.0
    for suffix, unit in _TIME_UNITS:
        if number.endswith(suffix):
            number, scale = number[: -len(suffix)].rstrip(), unit
            break
    try:
        value = float(number) * scale
    except ValueError:
        raise ValueError(f"a duration (e.g. 2.5, 250ms, 30s, 2m), not {text!r}") from None
    if not 0 <= value < float("inf"):  # also rejects nan
        raise ValueError(f"a duration of 0 seconds or more, not {text!r}")
    return value


def format_size(value: float) -> str:
    """A byte count for messages: ``"1.5 MiB"``, ``"512 B"``."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(value) >= scale:
            return f"{value / scale:.1f} {unit}"
    return f"{int(value)} B"


def parse_line_limit(text: str) -> tuple[str, int, int]:
    """``"app.py:12=100MB"`` -> ("app.py", 12, 104857600); ValueError (one line) otherwise."""
    where, equals, size = str(text).rpartition("=")
    if not equals:
        raise ValueError(f"expected FILE:LINE=SIZE (e.g. app.py:12=100MB), not {text!r}")
    return (*parse_location(where, text), parse_size(size))


def parse_location(where: str, text: str) -> tuple[str, int]:
    file, colon, line = where.rpartition(":")
    if not colon or not file or not line.strip().isdigit() or int(line) < 1:
        raise ValueError(f"expected FILE:LINE=SIZE (e.g. app.py:12=100MB), not {text!r}")
    return file, int(line)
