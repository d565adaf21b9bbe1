"""``heatline top [--rate HZ] [--refresh S] [--once] [--rows N] PID``: a live view of the
functions and lines taking time now in a running Python process, per thread, split into Python,
native and system time, read from outside it without stopping it (engine/top.py).

On a terminal the view is redrawn every --refresh seconds (rich's Live display); `q` or Ctrl-C
quits, and the process is left as it was (nothing was loaded into it, nothing stopped it).
Elsewhere (a pipe, a file) each view is printed as plain text, one after another, so it can be
read by scripts; --once prints one view and exits.
"""

from __future__ import annotations

import os
import select
import sys
from typing import TYPE_CHECKING

from heatline.cli.common import Parser, add_option, add_pid, fail, parse_pid
from heatline.options import TOP_OPTIONS

if TYPE_CHECKING:
    from heatline.engine.top import Reader, Sampler, Window

TEXT_ROWS = 25


def _parser() -> Parser:
    parser = Parser(
        prog="heatline top",
        description="A live view of the functions and lines taking time now in a running "
        "Python process, per thread, split into Python, native and system time, read from "
        "outside it about 100 times a second without stopping it (nothing is loaded into it). "
        "q or Ctrl-C quits. Needs the permission a debugger would (the same user, and Yama's "
        "ptrace_scope allowing it, or CAP_SYS_PTRACE). Not on a terminal, or with --once, each "
        "view is printed as text.",
        allow_abbrev=False,
    )
    for option in TOP_OPTIONS:
        add_option(parser, option)
    add_pid(parser)
    return parser


def run(args: list[str]) -> int:
    from heatline.engine import dump as dump_reader
    from heatline.engine import top

    options = _parser().parse_args(args)
    pid = parse_pid(options.pid)
    try:
        reader = top.Reader(pid)
    except dump_reader.DumpError as exc:
        fail(str(exc), 1)
    sampler = top.Sampler(reader, options.sampling_interval_s)
    live = sys.stdout.isatty() and not options.once
    sampler.start()
    try:
        if live:
            _live(reader, sampler, options)
        else:
            _text(reader, sampler, options)
    except KeyboardInterrupt:
        pass
    finally:
        sampler.stop()
    if sampler.gone:
        sys.stderr.write(f"heatline top: process {pid} exited\n")
    return 0


# ---- the view's contents ------------------------------------------------------------------


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
        label = f"{thread.native_id}" + (f" {thread.name}" if thread.name else "") + (
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


# ---- text: one view per interval ----------------------------------------------------------


def _text(reader: Reader, sampler: Sampler, options) -> None:
    import time

    rows = options.rows or TEXT_ROWS
    while True:
        time.sleep(options.refresh)
        window = sampler.take()
        if sampler.gone and window.readings == 0:
            return
        try:
            sys.stdout.write(as_text(reader, sampler, window, rows))
            if options.once or sampler.gone:
                sys.stdout.flush()
                return
            sys.stdout.write("\n")
            sys.stdout.flush()
        except BrokenPipeError:  # `heatline top PID | head`: the reader has had enough
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            os.close(devnull)
            return


# ---- a terminal: rich's Live display, q to quit ---------------------------------------------


def _table(reader: Reader, sampler: Sampler, window: Window, rows: int, width: int):
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
    # On a narrow terminal (80 columns) the function keeps room for its name: the total and
    # the seconds so far are left out.
    wide = width >= 110
    functions = Table(box=box.SIMPLE_HEAD, pad_edge=False, expand=True)
    names = ("thread", "own", "python", "native", "system") + (("total", "own (s)") if wide
                                                                else ())
    for name in names:
        functions.add_column(name, justify="right", no_wrap=True, min_width=6)
    functions.add_column("function (file:line)", overflow="ellipsis", no_wrap=True, ratio=1,
                         min_width=20)
    for thread, own, python, native, system, total, seconds, name, where in _function_rows(
            reader, sampler, window, rows):
        cells = [thread, f"{own:.1f}%", f"{python:.1f}%", f"{native:.1f}%", f"{system:.1f}%"]
        if wide:
            cells += [f"{total:.1f}%", f"{seconds:.2f}"]
        functions.add_row(*cells, Text(visible(f"{name} ({_short(where)})")))
    header = Text("\n".join(_header(reader, window)) + "\n(q or Ctrl-C quits)")
    return Group(header, threads, functions)


def _short(where: str) -> str:
    """A file:line under the current directory as a relative path (the terminal is narrow)."""
    here = os.getcwd() + os.sep
    return where[len(here):] if where.startswith(here) else where


def _live(reader: Reader, sampler: Sampler, options) -> None:
    import time

    from rich.console import Console
    from rich.live import Live
    from rich.text import Text

    console = Console()
    keys = _Keys()
    try:
        with Live(Text(f"heatline top: reading process {reader.pid}..."), console=console,
                  auto_refresh=False, vertical_overflow="crop") as live:
            deadline = time.monotonic() + options.refresh
            while True:
                if keys.wait_for_q(max(0.0, deadline - time.monotonic())):
                    return
                if time.monotonic() < deadline:
                    continue
                deadline += options.refresh
                window = sampler.take()
                rows = options.rows or max(3, console.size.height - 12 - len(window.threads))
                live.update(_table(reader, sampler, window, rows, console.size.width), refresh=True)
                if sampler.gone:
                    return
    finally:
        keys.restore()


class _Keys:
    """The terminal's keys one at a time (cbreak mode, Ctrl-C still a signal), when stdin is a
    terminal; restored on the way out."""

    def __init__(self) -> None:
        self.fd = sys.stdin.fileno() if sys.stdin is not None and sys.stdin.isatty() else -1
        self.saved = None
        if self.fd >= 0:
            import termios
            import tty

            self.saved = termios.tcgetattr(self.fd)
            tty.setcbreak(self.fd)

    def wait_for_q(self, timeout: float) -> bool:
        """Waits up to timeout seconds for a key; whether it was q."""
        import time

        if self.fd < 0:
            time.sleep(timeout)
            return False
        ready, _, _ = select.select([self.fd], [], [], timeout)
        return bool(ready) and os.read(self.fd, 1) in (b"q", b"Q")

    def restore(self) -> None:
        if self.saved is not None:
            import termios

            termios.tcsetattr(self.fd, termios.TCSADRAIN, self.saved)
            self.saved = None
