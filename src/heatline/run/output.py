"""What heatline itself writes while running a program: one-line messages on file descriptor
2, after the program's own buffered output, never through whatever ``sys.stderr`` is by then.
On a child's start path: imports nothing beyond the interpreter's start-up."""

from __future__ import annotations

import sys

from heatline.run import sigterm

# typing only for type checkers: a run's path imports none (heatline/__init__.py).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


_buffers_lost = False  # the process is about to exec (handover.py) or os._exit (finish.py)


def set_buffers_lost(lost: bool) -> None:
    """While the run ends before an exec or in os._exit: these lose the program's buffered
    output, as under python, so heatline's writes do not flush it either."""
    global _buffers_lost
    _buffers_lost = lost


def one_line(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return " ".join(text.split())


def internal_error(message: str) -> None:
    write_stderr(f"heatline: internal error: {message}\n")


def stderr_fd() -> Any:
    """A text stream on file descriptor 2 (use it in a with statement, which closes the stream
    and leaves the descriptor open), for what heatline writes at exit: the process's stderr,
    wherever the program pointed sys.stderr (into its log, None, stdout). Whatever the
    program's streams hold is flushed first, so heatline's text comes after it."""
    # Killed by SIGTERM, about to exec or in os._exit, python would not flush them: neither
    # do we.
    if not sigterm.terminating() and not _buffers_lost:
        for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
            flush(stream)
    encoding = getattr(sys.__stderr__, "encoding", None) or "utf-8"
    return open(2, "w", encoding=encoding, errors="backslashreplace", closefd=False)


def write_stderr(text: str) -> None:
    try:
        with stderr_fd() as stream:
            stream.write(text)
    except Exception:  # noqa: BLE001 -- stderr itself may be gone; nothing left to do
        pass


def flush(stream: Any) -> None:
    try:
        if stream is not None:
            stream.flush()
    except Exception:  # noqa: BLE001 -- a closed or broken stream must not stop the exit
        pass

