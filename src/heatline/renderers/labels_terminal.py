"""The Regions, Modules and Tasks sections of the terminal report, from the profile's
``regions``, ``modules`` and ``tasks`` (docs/profile-format.md); nothing is shown for a key
that is absent. Each table
fits 80 columns: the name column gives way (shortened in the middle), the numbers stay whole."""

from __future__ import annotations

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from heatline.renderers.visible import visible

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: the model imports typing
    from typing import Any

    from heatline.data.model import Profile

MAX_ROWS = 15
KINDS = (("Py s", "python_s"), ("nat s", "native_s"), ("sys s", "system_s"),
         ("wait s", "cpu_wait_s"))


def render(console: Console, profile: Profile) -> None:
    """Print the sections present in ``profile`` to ``console``."""
    regions = profile.get("regions") or []
    modules = profile.get("modules") or []
    elapsed = profile.get("elapsed_s") or 0.0
    if regions:
        console.print()
        console.print(Text("Regions", "bold"))
        rows = [(visible(r["path"]), r) for r in regions]
        console.print(_table("region", rows, elapsed, console.width, self_column=False),
                      no_wrap=True, overflow="ellipsis")
        _more(console, len(regions), "region")
    if modules:
        console.print()
        console.print(Text("Modules", "bold"))
        rows = [(visible(f"{m['path']} {m['class']}" if m["path"] else f"({m['root']})"), m)
                for m in modules]
        console.print(_table("module", rows, elapsed, console.width, self_column=True),
                      no_wrap=True, overflow="ellipsis")
        _more(console, len(modules), "module")
        console.print("wall s: its forward calls, the modules they call included; self s: "
                      "without them; (Root): the module called first. Py, nat, sys, wait s, "
                      "alloc: sampled, inclusive.", style="dim")
    tasks = profile.get("tasks") or []
    if tasks:
        console.print()
        console.print(Text("Tasks", "bold"))
        console.print(_task_table(tasks, console.width), no_wrap=True, overflow="ellipsis")
        _more(console, len(tasks), "task name")
        console.print("By task name, over the workers: wall s, their run time; Py, nat, sys s, "
                      "alloc: sampled; line: where most of their time went.", style="dim")


def _task_table(tasks: list[dict[str, Any]], width: int) -> Table:
    shown = tasks[:MAX_ROWS]
    headers = ["runs", "wall s", *(h for h, key in KINDS if key != "cpu_wait_s")]
    allocs = any(task.get("alloc_bytes") for task in shown)
    headers += ["alloc"] if allocs else []
    cells = []
    for task in shown:
        row = [str(task["count"]), f"{task['wall_s']:.3f}"]
        row += [f"{task.get(key, 0.0):.2f}" for h, key in KINDS if key != "cpu_wait_s"]
        row += [_size(task.get("alloc_bytes", 0))] if allocs else []
        top = task["lines"][0] if task.get("lines") else None
        where = f"{top['file'].rsplit('/', 1)[-1]}:{top['line']}" if top else "-"
        cells.append((visible(task["name"]), row, visible(where)))
    # each column takes its width and 3 more (the space between two columns)
    numbers = sum(max(len(h), *(len(r[i]) for _, r, _ in cells)) + 3
                  for i, h in enumerate(headers))
    name_room = min(max(len(name) for name, _, _ in cells), 24)
    line_room = max(min(width, 80) - name_room - 3 - numbers, 12)
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, header_style="bold")
    table.add_column("task", no_wrap=True)
    for header in headers:
        table.add_column(header, justify="right", no_wrap=True, min_width=len(header))
    table.add_column("line", no_wrap=True)
    for name, row, where in cells:
        # a place too long keeps its end: the file's name and the line number
        shown_where = where if len(where) <= line_room else "…" + where[-(line_room - 1):]
        table.add_row(_middle(name, name_room), *row, shown_where)
    return table


def _more(console: Console, count: int, what: str) -> None:
    if count > MAX_ROWS:
        console.print(f"{count - MAX_ROWS} more {what}s in the profile", style="dim")


def _table(title: str, rows: list[tuple[str, dict[str, Any]]], elapsed: float, width: int,
           *, self_column: bool) -> Table:
    shown = rows[:MAX_ROWS]
    waits = any(entry.get("cpu_wait_s") for _, entry in shown)
    headers = ["calls", "wall s", "self s"] if self_column else ["count", "wall s", "%"]
    headers += [h for h, key in KINDS if waits or key != "cpu_wait_s"]
    # memory: when it was profiled and something was allocated inside
    allocs = any(entry.get("alloc_bytes") for _, entry in shown)
    if allocs:
        headers.append("alloc")
    cells = []
    for name, entry in shown:
        row = [str(entry["count"]), f"{entry['wall_s']:.3f}"]
        if self_column:
            row.append(f"{entry['self_s']:.3f}")
        else:
            row.append(f"{100.0 * entry['wall_s'] / elapsed:.1f}" if elapsed > 0 else "-")
        row += [f"{entry.get(key, 0.0):.2f}" for h, key in KINDS if waits or key != "cpu_wait_s"]
        if allocs:
            row.append(_size(entry.get("alloc_bytes", 0)))
        cells.append((name, row))
    numbers = sum(max(len(h), *(len(r[i]) for _, r in cells)) + 2
                  for i, h in enumerate(headers))
    room = max(min(width, 80) - numbers, 12)
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, header_style="bold")
    table.add_column(title, no_wrap=True)
    for header in headers:
        table.add_column(header, justify="right", no_wrap=True, min_width=len(header))
    for name, row in cells:
        table.add_row(_middle(name, room), *row)
    return table


def _size(value: int) -> str:
    """Bytes in at most 6 characters: "27.6M", "512K", "96B" (binary units)."""
    for unit, scale in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if value >= scale:
            shown = f"{value / scale:.1f}" if value < 100 * scale else str(value // scale)
            return shown + unit
    return f"{value}B"


def _middle(text: str, room: int) -> str:
    """``text`` shortened in its middle to ``room`` characters (a path's both ends tell)."""
    if len(text) <= room:
        return text
    keep = room - 1
    return text[: keep // 2] + "…" + text[len(text) - (keep - keep // 2):]
