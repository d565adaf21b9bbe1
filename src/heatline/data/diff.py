"""``heatline diff before.json after.json``: what changed between two profiles.

Functions are matched by file and qualified name; lines by file, function and source text
(stripped; the n-th occurrence of the same text in a function pairs with the n-th), so an edit
that moves code up or down still pairs each line with itself. Files are matched by path, or by
base name when the path differs but the name is unique in both. Rows are sorted by impact: the
largest absolute change in time, then in bytes allocated.

Exit status: 0, or 1 with ``--fail-on-regression PCT`` when the total time (python + native +
system + waiting for a CPU over all lines) grew by more than PCT percent, or any function's time
grew by more than PCT percent of the before total.
"""

from __future__ import annotations

import os
from typing import Any, TextIO

from heatline.data.queries import function_of_line

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: the model imports typing
    from heatline.data.model import Profile

KINDS = ("python_s", "native_s", "system_s", "cpu_wait_s")
_TIMES = len(KINDS)  # a row's values: the times (KINDS), then alloc and copy bytes


def _memory(entry: dict[str, Any]) -> tuple[int, int]:
    alloc = entry.get("alloc_python_bytes", 0) + entry.get("alloc_native_bytes", 0)
    return alloc, entry.get("copy_bytes", 0)


def _values(entry: dict[str, Any]) -> list[float]:
    return [entry.get(kind, 0.0) for kind in KINDS] + list(_memory(entry))


def _file_keys(before: Profile, after: Profile) -> dict[str, str]:
    """after path -> the key both sides use for that file."""
    names_before = [os.path.basename(p) for p in before]
    names_after = [os.path.basename(p) for p in after]
    keys = {}
    for path in after:
        name = os.path.basename(path)
        if path in before:
            keys[path] = path
        elif names_before.count(name) == 1 and names_after.count(name) == 1:
            keys[path] = next(p for p in before if os.path.basename(p) == name)
        else:
            keys[path] = path
    return keys


def _functions(files: dict[str, Any], rename: dict[str, str]) -> dict[tuple, list[float]]:
    result: dict[tuple, list[float]] = {}
    for path, entry in files.items():
        for function in entry.get("functions", []):
            key = (rename.get(path, path), function.get("qualname") or function.get("name"))
            result[key] = _values(function)
    return result


def _lines(files: dict[str, Any], rename: dict[str, str]) -> dict[tuple, tuple[int, list]]:
    result: dict[tuple, tuple[int, list]] = {}
    for path, entry in files.items():
        seen: dict[tuple, int] = {}
        for line in entry.get("lines", []):
            values = _values(line)
            if not any(values):
                continue
            base = (rename.get(path, path), function_of_line(entry, line),
                    line.get("source", "").strip())
            seen[base] = seen.get(base, 0) + 1
            result[base + (seen[base],)] = (line["line"], values)
    return result


def _rows(before: dict[tuple, Any], after: dict[tuple, Any]) -> list[tuple]:
    rows = []
    for key in set(before) | set(after):
        b, a = before.get(key), after.get(key)
        bv = (b[1] if isinstance(b, tuple) else b) or [0.0] * (_TIMES + 2)
        av = (a[1] if isinstance(a, tuple) else a) or [0.0] * (_TIMES + 2)
        delta = [x - y for x, y in zip(av, bv)]
        lines = (b[0] if isinstance(b, tuple) else None, a[0] if isinstance(a, tuple) else None)
        rows.append((key, bv, av, delta, lines))
    rows.sort(key=lambda row: (-abs(sum(row[3][:_TIMES])), -abs(row[3][_TIMES]), str(row[0])))
    return rows


def compare(before: Profile, after: Profile) -> dict[str, Any]:
    rename = _file_keys(before.get("files", {}), after.get("files", {}))
    same = {p: p for p in before.get("files", {})}
    return {
        "before_s": (before.get("totals") or {}).get("attributed_s", 0.0),
        "after_s": (after.get("totals") or {}).get("attributed_s", 0.0),
        "functions": _rows(_functions(before.get("files", {}), same),
                           _functions(after.get("files", {}), rename)),
        "lines": _rows(_lines(before.get("files", {}), same),
                       _lines(after.get("files", {}), rename)),
    }


def _signed(value: float, unit: str) -> str:
    if unit == "s":
        return f"{value:+.3f}s"
    size = abs(value)
    for suffix in ("B", "KiB", "MiB", "GiB"):  # binary, and named so, as everywhere
        if size < 1024 or suffix == "GiB":
            break
        size /= 1024
    return f"{'-' if value < 0 else '+'}{size:.0f}{suffix}" if value else "0"


def _table(title: str, rows: list[tuple], limit: int, out: TextIO, lines: bool) -> None:
    # The wait for a CPU has a column only where a listed row has some (an oversubscribed
    # machine), so the report of an ordinary run keeps its width.
    shown = []
    for row in rows[:limit]:
        if not any(row[3]):
            break
        shown.append(row)
    waits = any(row[1][3] or row[2][3] for row in shown)
    out.write(f"\n{title}\n")
    out.write(f"{'total':>9} {'python':>8} {'native':>8} {'system':>8} "
              + (f"{'cpu wait':>8} " if waits else "") + f"{'alloc':>7} {'copy':>7}  where\n")
    for key, bv, av, delta, numbers in shown:
        if lines:
            before_line, after_line = numbers
            where = (f"{os.path.basename(key[0])}:{after_line or before_line} {key[1]}: "
                     f"{key[2][:60]}")
            if before_line and after_line and before_line != after_line:
                where += f"  (was line {before_line})"
            elif not after_line:
                where += "  (gone)"
            elif not before_line:
                where += "  (new)"
        else:
            where = f"{key[1]} ({os.path.basename(key[0])})"
        out.write(f"{_signed(sum(delta[:_TIMES]), 's'):>9} {_signed(delta[0], 's'):>8} "
                  f"{_signed(delta[1], 's'):>8} {_signed(delta[2], 's'):>8} "
                  + (f"{_signed(delta[3], 's'):>8} " if waits else "")
                  + f"{_signed(delta[_TIMES], 'B'):>7} {_signed(delta[_TIMES + 1], 'B'):>7}"
                  f"  {where}\n")


def regressions(result: dict[str, Any], pct: float) -> list[str]:
    found = []
    before = result["before_s"]
    if before > 0 and result["after_s"] > before * (1 + pct / 100):
        found.append(f"total time {before:.3f}s -> {result['after_s']:.3f}s")
    for key, bv, av, delta, _ in result["functions"]:
        if before > 0 and sum(delta[:_TIMES]) > before * pct / 100:
            found.append(f"{key[1]}: {sum(bv[:_TIMES]):.3f}s -> {sum(av[:_TIMES]):.3f}s")
    return found


def report(result: dict[str, Any], out: TextIO, limit: int = 20) -> None:
    before, after = result["before_s"], result["after_s"]
    change = f" ({100 * (after - before) / before:+.1f}%)" if before else ""
    out.write(f"total time {before:.3f}s -> {after:.3f}s{change}\n")
    _table("Functions (after - before, largest change first)", result["functions"], limit, out,
           lines=False)
    _table("Lines (matched by function and source text)", result["lines"], limit, out,
           lines=True)
