"""A profile against a budget (``heatline check``, the pytest plugin's limits), for CI.

A budget is a set of limits: ``max_peak`` (bytes of the program's peak memory), ``max_time``
(wall seconds), ``max_cpu`` (CPU seconds of the process), ``no_leaks`` (no line flagged as a
likely leak) and ``max_line_peak`` (the peak bytes of one line, ``FILE:LINE``; FILE matches a
profiled path equal to it or ending in ``/FILE``). :func:`breaches` lists, one line each, the
limits a profile exceeds; an empty list means within budget.

A budget file (``--budget``) holds the same limits, keys named like the flags (``max-peak`` or
``max_peak``): JSON when its name ends in ``.json``, TOML otherwise (Python 3.11's tomllib, or
the ``tomli`` package before 3.11). In a ``pyproject.toml`` the limits live in
``[tool.heatline.check]``. Sizes and durations are strings as units.py reads them (``"500MB"``,
``"30s"``; sizes are binary: MB = MiB = 2^20 bytes) or plain numbers (bytes, seconds).
"""

from __future__ import annotations

import os
from typing import Any

from heatline import units
from heatline.data import memory

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: the model imports typing
    from heatline.data.model import Profile


class BudgetError(Exception):
    """A budget or a profile that cannot be checked; str() is one line."""


class Budget:
    """The limits; None (or False, or no entries) means "no limit"."""

    def __init__(self) -> None:
        self.max_peak: int | None = None
        self.max_time: float | None = None
        self.max_cpu: float | None = None
        self.no_leaks = False
        self.max_line_peak: list[tuple[str, int, int]] = []  # (file, line, bytes)

    def empty(self) -> bool:
        return (self.max_peak is None and self.max_time is None and self.max_cpu is None
                and not self.no_leaks and not self.max_line_peak)


_KEYS = ("max-peak", "max-time", "max-cpu", "no-leaks", "max-line-peak")


def load_budget(path: str) -> Budget:
    """The budget in file ``path``; BudgetError (one line naming the file) when unusable."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as exc:
        raise BudgetError(f"can't read budget '{path}': {exc.strerror or exc}") from None
    try:
        if path.endswith(".json"):
            import json

            data = json.loads(raw.decode("utf-8"))
        else:
            data = _toml().loads(raw.decode("utf-8"))
    except BudgetError:
        raise
    except Exception as exc:  # noqa: BLE001 -- any parse error is the file's fault
        text = " ".join(str(exc).split())
        raise BudgetError(f"budget '{path}' is not valid {_kind(path)}: {text}") from None
    if isinstance(data, dict) and os.path.basename(path) == "pyproject.toml":
        data = data.get("tool", {}).get("heatline", {}).get("check", {})
    if not isinstance(data, dict):
        raise BudgetError(f"budget '{path}' should hold a table of limits")
    budget = Budget()
    try:
        apply(budget, data)
    except ValueError as exc:
        raise BudgetError(f"budget '{path}': {exc}") from None
    return budget


def _kind(path: str) -> str:
    return "JSON" if path.endswith(".json") else "TOML"


def _toml() -> Any:
    try:
        import tomllib  # type: ignore[import-not-found]  # 3.11+
    except ImportError:
        try:
            import tomli as tomllib  # type: ignore[import-not-found,no-redef]
        except ImportError:
            raise BudgetError(
                "reading a TOML budget needs Python 3.11+ or the tomli package; "
                "or write the budget as JSON (a .json file)"
            ) from None
    return tomllib


def apply(budget: Budget, data: dict[str, Any]) -> None:
    """Set the limits named in ``data`` (keys like the flags); ValueError for a bad one."""
    for key, value in data.items():
        name = str(key).replace("_", "-")
        if name not in _KEYS:
            raise ValueError(f"unknown limit {key!r} (known: {', '.join(_KEYS)})")
        try:
            if name == "max-peak":
                budget.max_peak = units.parse_size(value)
            elif name == "max-time":
                budget.max_time = units.parse_seconds(value)
            elif name == "max-cpu":
                budget.max_cpu = units.parse_seconds(value)
            elif name == "no-leaks":
                if not isinstance(value, bool):
                    raise ValueError("should be true or false")
                budget.no_leaks = value
            elif isinstance(value, dict):  # max-line-peak = {"app.py:12" = "100MB"}
                for where, size in value.items():
                    budget.max_line_peak.append(
                        (*units.parse_location(str(where), f"{where}={size}"),
                         units.parse_size(size))
                    )
            elif isinstance(value, list):  # max-line-peak = ["app.py:12=100MB"]
                budget.max_line_peak.extend(units.parse_line_limit(item) for item in value)
            else:
                raise ValueError('should be a table {"FILE:LINE" = SIZE} or a list of '
                                 '"FILE:LINE=SIZE"')
        except ValueError as exc:
            raise ValueError(f"{name}: {exc}") from None


def breaches(profile: Profile, budget: Budget) -> list[str]:
    """One line per limit the profile exceeds. BudgetError when a memory limit is asked of a
    profile recorded without memory (--cpu-only)."""
    found = []
    memory_limits = budget.max_peak is not None or budget.no_leaks or budget.max_line_peak
    if memory_limits and not profile.get("memory", {}).get("enabled"):
        raise BudgetError("the profile has no memory data (recorded with --cpu-only), so its "
                          "memory limits cannot be checked")
    if budget.max_peak is not None and profile["peak_bytes"] > budget.max_peak:
        found.append(
            f"peak memory {units.format_size(profile['peak_bytes'])} exceeds --max-peak "
            f"{units.format_size(budget.max_peak)}{_peak_blame(profile)}"
        )
    if budget.max_time is not None and profile["elapsed_s"] > budget.max_time:
        found.append(f"wall time {_duration(profile['elapsed_s'])} exceeds "
                     f"--max-time {_duration(budget.max_time)}")
    if budget.max_cpu is not None and profile["cpu_s"] > budget.max_cpu:
        found.append(f"CPU time {_duration(profile['cpu_s'])} exceeds "
                     f"--max-cpu {_duration(budget.max_cpu)}")
    if budget.no_leaks:
        for path, line in _lines(profile):
            leak = line.get("leak")
            if leak:
                found.append(
                    f"likely leak at {path}:{line['line']}: grows "
                    f"{units.format_size(leak['growth_bytes_per_s'])}/s "
                    f"(likelihood {leak['likelihood']:.2f}), --no-leaks allows none"
                )
    for file, number, limit in budget.max_line_peak:
        for path, line in _lines(profile):
            if line["line"] == number and _same_file(path, file) and \
                    line.get("peak_bytes", 0) > limit:
                found.append(
                    f"line {path}:{number} peaked at {units.format_size(line['peak_bytes'])}, "
                    f"exceeds --max-line-peak {file}:{number}={units.format_size(limit)}"
                )
    return found


def unmatched_line_limits(profile: Profile, budget: Budget) -> list[str]:
    """The FILE parts of --max-line-peak that name no file of the profile (likely typos)."""
    return [f"{file}:{line}" for file, line, _ in budget.max_line_peak
            if not any(_same_file(path, file) for path in profile["files"])]


def summary(profile: Profile, budget: Budget) -> str:
    """One line: the figures the budget limits, for a run within budget."""
    parts = []
    if budget.max_peak is not None:
        parts.append(f"peak {units.format_size(profile['peak_bytes'])} <= "
                     f"{units.format_size(budget.max_peak)}")
    if budget.max_time is not None:
        parts.append(f"wall {_duration(profile['elapsed_s'])} <= "
                     f"{_duration(budget.max_time)}")
    if budget.max_cpu is not None:
        parts.append(f"CPU {_duration(profile['cpu_s'])} <= "
                     f"{_duration(budget.max_cpu)}")
    if budget.no_leaks:
        parts.append("no likely leaks")
    if budget.max_line_peak:
        parts.append(f"{len(budget.max_line_peak)} line limit(s) met")
    return "within budget: " + ", ".join(parts)


def _duration(seconds: float) -> str:
    """``31.25`` -> ``"31.25 s"``, ``0.0123`` -> ``"12.3 ms"``."""
    return f"{seconds * 1000:.3g} ms" if abs(seconds) < 1 else f"{seconds:.2f} s"


def _same_file(path: str, name: str) -> bool:
    name = name.replace(os.sep, "/")
    path = path.replace(os.sep, "/")
    return path == name or path.endswith("/" + name.lstrip("./"))


def _lines(profile: Profile):  # noqa: ANN202 -- an iterator of (path, line)
    for path, entry in profile["files"].items():
        for line in entry["lines"]:
            yield path, line


def _peak_blame(profile: Profile, top: int = 3) -> str:
    """'; at the peak: a.py:12 400.0 MiB, ...': the lines holding the most memory when the
    program peaked (by their own peaks when the profile has no peak time). With child
    processes, the lines of every process at the combined peak, each with its pid."""
    combined = profile.get("combined_peak")
    if combined is not None:
        listed = ", ".join(
            f"{line['file']}:{line['line']} (pid {line['pid']}) {units.format_size(line['bytes'])}"
            for line in combined["lines"][:top])
        return f"; held at the peak by: {listed}" if listed else ""
    peak_at = profile.get("peak_at")
    held = []
    for path, line in _lines(profile):
        if peak_at is not None:
            amount = memory.value_at(line.get("timeline", []), peak_at["t_s"])
        else:
            amount = line.get("peak_bytes", 0)
        if amount > 0:
            held.append((amount, path, line["line"]))
    held.sort(key=lambda item: -item[0])
    if not held:
        return ""
    label = "held at the peak by" if peak_at is not None else "largest line peaks"
    listed = ", ".join(f"{path}:{number} {units.format_size(amount)}"
                       for amount, path, number in held[:top])
    return f"; {label}: {listed}"
