"""``heatline top``'s view of a window of readings (engine/top.py's Reader, Sampler and
Window): the plain text printed one view after another (:func:`as_text`), and the tables
rich's Live display redraws on a terminal (:func:`table`). cli/top.py parses the arguments,
runs the sampler and shows what these return."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from heatline.engine.top import Reader, Sampler, Window


def _pct(ns: int, wall_ns: int) -> float:
    return 100.0 * ns / wall_ns if wall_ns > 0 else 0.0


def _header(reader: Reader, window: Window) -> list[str]:
    from heatline.renderers.visible import visible

    wall = window.end - window.start
    command = " ".join(p for p in _read(f"/proc/{reader.pid}/cmdline").split("\0") if p)
    rate = window.readings / wall if wall else 0.0
    reading_ms = 1e3 * window.read_s / wall if wall else 0.0
    lines = [visible(f"Process {reader.pid}: {command or '?'}  (Python {reader.version_text})"),
             f"{window.readings} readings in {wall:.2f} s ({rate:.0f}/s, heatline's reading "
             f"{reading_ms:.1f} ms/s); % of one thread's time; the process is not stopped"]
    if reader.native_note:
        lines.append(visible(f"Native time not told from Python: {reader.native_note}"))
    if reader.torn:
        lines.append(f"{reader.torn} thread readings dropped so far (torn: the stack moved "
                     "while read)")
    return lines


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as file:
            return file.read()
    except OSError:
        return ""


def _thread_rows(window: Window) -> list[tuple[str, float, float, float, float]]:
    wall_ns = window.sampled_ns
    rows = []
    for thread in sorted(window.threads.values(), key=lambda t: (not t.main, t.native_id)):
        name = thread.python_name or thread.name  # threading's name, else the kernel's
        label = f"{thread.native_id}" + (f" {name}" if name else "") + (
            " (main)" if thread.main else "")
        rows.append((label, *(_pct(ns, wall_ns) for ns in thread.ns),
                     _pct(thread.gil_ns, wall_ns)))
    return rows


def _function_rows(reader: Reader, sampler: Sampler, window: Window, limit: int) -> list[tuple]:
    """(thread, own%, python%, native%, system%, total%, own seconds so far, function, where),
    busiest first (Python and native time, then system)."""
    wall_ns = window.sampled_ns
    rows = []
    for thread in window.threads.values():
        for function_id, times in thread.functions.items():
            own = sum(times.own_ns)
            if own == 0:
                continue
            function = reader.function(function_id)
            line = max(times.lines, key=times.lines.__getitem__)
            rows.append(((times.own_ns[0] + times.own_ns[1], times.own_ns[2]), (
                str(thread.native_id), _pct(own, wall_ns), *(_pct(ns, wall_ns)
                                                             for ns in times.own_ns),
                _pct(times.total_ns, wall_ns),
                sampler.total_own_ns.get((thread.native_id, function_id), 0) / 1e9,
                function.qualname, f"{function.file}:{line}")))
    rows.sort(key=lambda r: r[0], reverse=True)
    return [row for _, row in rows[:limit]]


def as_text(reader: Reader, sampler: Sampler, window: Window, rows: int) -> str:
    from heatline.renderers.visible import visible

    lines = _header(reader, window)
    lines.append("")
    lines.append(f"{'THREAD':<28} {'PYTHON':>7} {'NATIVE':>7} {'SYSTEM':>7} {'GIL':>7}")
    for label, python, native, system, gil in _thread_rows(window):
        lines.append(visible(f"{label:<28} {python:6.1f}% {native:6.1f}% {system:6.1f}% "
                             f"{gil:6.1f}%"))
    lines.append("")
    lines.append(f"{'THREAD':>8} {'OWN':>7} {'PYTHON':>7} {'NATIVE':>7} {'SYSTEM':>7} "
                 f"{'TOTAL':>7} {'OWN(s)':>8}  FUNCTION (FILE:LINE)")
    for thread, own, python, native, system, total, seconds, name, where in _function_rows(
            reader, sampler, window, rows):
        lines.append(visible(f"{thread:>8} {own:6.1f}% {python:6.1f}% {native:6.1f}% "
                             f"{system:6.1f}% {total:6.1f}% {seconds:8.2f}  {name} ({where})"))
    return "\n".join(lines) + "\n"


def table(reader: Reader, sampler: Sampler, window: Window, rows: int, width: int):
    from rich import box
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    from heatline.renderers.visible import visible

    threads = Table(box=box.SIMPLE_HEAD, pad_edge=False, expand=False)
    for name, justify in (("thread", "left"), ("python", "right"), ("native", "right"),
                          ("system", "right"), ("GIL", "right")):
        threads.add_column(name, justify=justify)
    for label, *values in _thread_rows(window):
        threads.add_row(visible(label), *(f"{v:.1f}%" for v in values))
    functions = Table(box=box.SIMPLE_HEAD, pad_edge=False, expand=True)
    found = _function_rows(reader, sampler, window, rows)
    cells = {"thread": [r[0] for r in found], "own (s)": [f"{r[6]:.2f}" for r in found]}
    for at, name in enumerate(("own", "python", "native", "system", "total"), 1):
        cells[name] = [f"{r[at]:.1f}%" for r in found]
    names = _columns(cells, width)
    for name in names:
        functions.add_column(name, justify="right", no_wrap=True, min_width=6)
    functions.add_column("function (file:line)", overflow="ellipsis", no_wrap=True, ratio=1,
                         min_width=FUNCTION_MIN_WIDTH)
    for at, (*_, name, where) in enumerate(found):
        functions.add_row(*(cells[column][at] for column in names),
                          Text(visible(f"{name} ({_short(where)})")))
    header = Text("\n".join(_header(reader, window)) + "\n(q or Ctrl-C quits)")
    return Group(header, threads, functions)


# The function table's columns, in their order; on a narrow terminal those that do not fit
# beside the function's FUNCTION_MIN_WIDTH columns are left out, the least needed first (the
# seconds so far, then the split into Python, native and system), so own and total always show,
# as py-spy top's do at 80 columns: the function's text is narrowed (ellipsized) before.
COLUMNS = ("thread", "own", "python", "native", "system", "total", "own (s)")
DROPPED_FIRST = (("own (s)",), ("python", "native", "system"))
FUNCTION_MIN_WIDTH = 20


def _columns(cells: dict[str, list[str]], width: int) -> list[str]:
    """The columns shown at this terminal width; cells: each column's texts."""
    def used(names: list[str]) -> int:
        # Each column: its widest text, a space of padding each side and one between columns
        # (rich's SIMPLE_HEAD box, pad_edge off); the function column's minimum and the edges.
        return sum(max(6, len(name), *map(len, cells[name])) + 3 for name in names) + (
            FUNCTION_MIN_WIDTH + 2)

    names = list(COLUMNS)
    for group in DROPPED_FIRST:
        if used(names) <= width:
            break
        names = [name for name in names if name not in group]
    return names


def _short(where: str) -> str:
    """A file:line under the current directory as a relative path (the terminal is narrow)."""
    here = os.getcwd() + os.sep
    return where[len(here):] if where.startswith(here) else where
