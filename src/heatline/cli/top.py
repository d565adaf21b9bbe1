"""``heatline top [--sampling-interval S] [--refresh S] [--once] [--rows N] PID``: a live view
of the functions and lines taking time now in a running Python process, per thread, split into
Python, native and system time, read from outside it without stopping it (engine/top.py), shown as
renderers/top_text.py renders it.

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
    from heatline.engine.top import Reader, Sampler

TEXT_ROWS = 25


def _parser() -> Parser:
    parser = Parser(
        prog="heatline top",
        description="A live view of the functions and lines taking time now in a running "
        "Python process, per thread, split into Python, native and system time, read from "
        "outside it every --sampling-interval without stopping it (nothing is loaded into it). "
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


# ---- text: one view per interval ----------------------------------------------------------


def _text(reader: Reader, sampler: Sampler, options) -> None:
    import time

    from heatline.renderers.top_text import as_text

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


def _live(reader: Reader, sampler: Sampler, options) -> None:
    import time

    from rich.console import Console
    from rich.live import Live
    from rich.text import Text

    from heatline.renderers.top_text import table

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
                live.update(table(reader, sampler, window, rows, console.size.width), refresh=True)
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
