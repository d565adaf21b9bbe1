"""The command line: ``heatline [run] [options] script.py [args...]`` (or ``-m module``),
``heatline [options] -- command [args...]``, and
the subcommands ``view``, ``diff``, ``check``, ``ctl``, ``dump``, ``top``, ``attach`` and
``merge``, one module each. Every
mistake on the command line is one ``heatline: error: ...`` line on stderr, never a
traceback."""

from __future__ import annotations

import sys

# typing and collections.abc only for type checkers: a run's path imports neither
# (heatline/__init__.py).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

    from heatline.run.launch import Launch

# The subcommands: the first argument that names one (anything else is the program to run,
# as after `heatline run`; `heatline ./view` runs a script named view).
SUBCOMMANDS = ("view", "diff", "check", "ctl", "dump", "top", "attach", "merge")


# The subcommands whose command ends the process at once when they are done, skipping the
# interpreter's finalization (tearing down every module and object: about 2 ms, an eighth of
# `heatline dump`'s run, which is all start-up; docs/design-live.md): they hold no file or
# thread that finalization would close, and run none of a program's code.
QUICK_EXIT = ("dump",)


def exit_now(status: int) -> None:
    """End the process with status once stdout and stderr are flushed; returns (and the
    interpreter ends as usual, reporting what it must) when they cannot be flushed."""
    import os

    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return
    os._exit(status)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``heatline`` command; returns the exit status."""
    prepared = prepare(argv)
    return prepared if isinstance(prepared, int) else prepared.run()


def prepare(argv: Sequence[str] | None = None) -> int | Launch:
    """Everything :func:`main` does before the program runs: an exit status when there is
    nothing to run (a subcommand, ``--help``), else the program ready to run (a Launch)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] and args[0] in SUBCOMMANDS:
        # __import__, not importlib.import_module: importing importlib (and warnings) costs a
        # command whose whole run is its start-up (heatline dump) more than its reading.
        status = __import__(f"heatline.cli.{args[0]}", fromlist=["run"]).run(args[1:])
        if argv is None and args[0] in QUICK_EXIT:
            exit_now(status)
        return status
    from heatline.cli import run

    if args[:1] == ["run"]:  # a Python program only: `heatline run -- -odd-name.py` is a script
        return run.prepare(args[1:], command_allowed=False)
    return run.prepare(args)
