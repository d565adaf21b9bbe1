"""The program's uncaught exceptions and syntax errors, printed as python prints them, without
heatline's own frames."""

from __future__ import annotations

import os
import sys
import types

# typing only for type checkers: a run's path imports none (heatline/__init__.py).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# heatline's package directory: frames of files under it are heatline's, not the program's.
_HEATLINE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def print_syntax_error(exc: BaseException) -> None:
    import traceback

    sys.stderr.write("".join(traceback.format_exception_only(type(exc), exc)))
    sys.stderr.flush()


def is_internal(frame: types.FrameType) -> bool:
    """Frames of heatline itself. (runpy's are python's own: it runs ``-m`` modules,
    directories and zip archives through them, and its tracebacks show them.)"""
    return frame.f_code.co_filename.startswith(_HEATLINE_DIR)


def program_part(tb: Any) -> Any:
    """A traceback without its leading heatline frames."""
    while tb is not None and is_internal(tb.tb_frame):
        tb = tb.tb_next
    return tb


def report_uncaught(exc: BaseException) -> None:
    """Print an uncaught exception the way the interpreter does, minus heatline's frames."""
    tb = program_part(exc.__traceback__)
    exc = exc.with_traceback(tb)
    sys.last_type, sys.last_value, sys.last_traceback = type(exc), exc, tb
    if sys.version_info >= (3, 12):
        sys.last_exc = exc
    try:
        sys.excepthook(type(exc), exc, tb)
    except BaseException as hook_exc:  # noqa: BLE001
        # A broken user excepthook: say so and fall back to the default hook, in the
        # interpreter's words (Python/pythonrun.c, _PyErr_PrintEx; the fflush(stdout) there
        # is C's stdout, not the program's sys.stdout, which stays as it is).
        sys.stderr.write("Error in sys.excepthook:\n")
        hook_exc.__context__ = None  # the interpreter calls the hook outside any handler
        hook_tb = program_part(hook_exc.__traceback__)
        sys.__excepthook__(type(hook_exc), hook_exc.with_traceback(hook_tb), hook_tb)
        sys.stderr.write("\nOriginal exception was:\n")
        sys.__excepthook__(type(exc), exc, tb)
        del hook_exc, hook_tb
    finally:
        del exc, tb  # break the frame <-> traceback cycle


class SkipOnce:
    """sys.excepthook while an exception heatline already printed leaves the interpreter:
    puts the program's hook back and prints anything else through it."""

    def __init__(self, exc: BaseException, hook: Any) -> None:
        self.exc = exc
        self.hook = hook

    def __call__(self, kind: type, value: BaseException, tb: Any) -> None:
        sys.excepthook = self.hook
        if value is not self.exc:
            self.hook(kind, value, tb)
        self.exc = None  # type: ignore[assignment]


def rearm_sigint_exit() -> None:
    """Make sure the interpreter still ends by SIGINT after its shutdown.

    An uncaught KeyboardInterrupt sets a flag that makes the interpreter kill itself with
    SIGINT once finalized; but every exec() of a *string* clears it (Python/pythonrun.c,
    run_eval_code_obj), and building the report may run some (collections.namedtuple,
    dataclasses). The same function sets the flag when such code raises KeyboardInterrupt.
    """
    try:
        exec("raise KeyboardInterrupt")  # noqa: S102
    except KeyboardInterrupt:
        pass

