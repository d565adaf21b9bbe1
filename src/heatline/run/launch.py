"""Launching the program under the profiler, exactly as ``python script.py`` or ``python -m
module`` would run it.

What "exactly" covers: a fresh ``__main__`` module, ``sys.argv``, ``sys.path[0]``, tracebacks
free of heatline's frames, and Python's exit behaviour (``SystemExit``, uncaught exceptions,
Ctrl-C, waiting for non-daemon threads and atexit handlers). The profile is finished from an
atexit handler registered before the program starts: atexit runs handlers last-in first-out
and after non-daemon threads are joined, so that handler sees all the program's work.
heatline never writes to stdout; its report goes to stderr once the program is done.
"""

from __future__ import annotations

import atexit
import builtins
import os
import sys
import types

# Few imports here, and none of json, dataclasses, inspect or traceback: whatever heatline holds
# in memory while the program runs, the program's own full garbage collections must walk too.
from heatline.options import Options
from heatline.run import carrier as carriers
from heatline.run import follow
from heatline.run.isolation import OWN_PATH, set_aside_own_modules
from heatline.run.errors import SkipOnce, report_uncaught
from heatline.run.finish import Finisher
from heatline.run.program import Program, ProgramError, find_module, find_script
from heatline.run.sigterm import SigtermGuard

# typing only for the annotations (strings here): importing it costs a child process about
# 10 ms (re, functools, collections...), and this module is on a child's start path.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def run_script(script: str, args: list[str], options: Options) -> Launch:
    """Prepare to profile ``python script args...``: the profiler is started."""
    return start(find_script(script, args), options)


def run_module(module: str, args: list[str], options: Options) -> Launch:
    """Prepare to profile ``python -m module args...``: the profiler is started."""
    return start(find_module(module, args), options)


def start(program: Program, options: Options) -> Launch:
    from heatline.engine.session import Session

    _check_outfile_is_not_the_program(options.outfile, program.module_attrs.get("__file__"))
    main = types.ModuleType("__main__")
    main.__dict__.update(program.module_attrs)
    main.__dict__["__builtins__"] = builtins
    sys.modules["__main__"] = main  # a fresh module, so pickle finds __main__ classes
    sys.argv = list(program.argv)

    session = Session(program=program.label, argv=program.argv, **options.session_arguments())
    from heatline.engine import marked

    marked.install(builtins)  # @profile: the one builtin heatline adds (engine/marked.py)
    session.snapshot_filter = marked.keep_marked
    finisher = Finisher(session, options)
    atexit.register(finisher)
    try:
        session.start()
    except (RuntimeError, OSError) as exc:
        atexit.unregister(finisher)
        raise ProgramError(f"could not start the profiler: {exc}", 1) from None

    carrier = None
    if not options.no_children:
        program_path = list(sys.path)
        sys.path[:] = OWN_PATH  # heatline's imports, never the program's json.py, random.py
        try:
            carrier = carriers.enable(options.session_arguments(), session.start_epoch)
        finally:
            sys.path[:] = program_path
    # The modules heatline wrapped a function of stay, or the program would import fresh,
    # unwrapped copies.
    finisher.own_modules = set_aside_own_modules(carriers.WRAPPED_MODULES if carrier else ())
    SigtermGuard(finisher).install()
    if carrier is not None:
        follow.install(carrier)  # its fork hook must run after the guard's (in a child)
    if options.profile_interval_s is not None and options.outfile:
        session.every(options.profile_interval_s, finisher.write_so_far)
    return Launch(program.code, main.__dict__, finisher)


class Launch:
    """A program ready to run, the profiler started: ``exec(launch.code, launch.globals)``,
    then ``launch.ended(exc)`` with whatever escaped it.

    The exec is left to the caller so that it can happen in the shallowest frame heatline
    has (heatline/__main__.py's module level): the program sees as few heatline frames below
    its own as possible (sys._getframe(), the recursion limit, warnings' stacklevel)."""

    def __init__(self, code: types.CodeType, globals_: dict[str, Any], finisher: Any) -> None:
        self.code = code
        self.globals = globals_
        self.finisher = finisher

    def run(self) -> int:
        """Run the program here (one frame deeper than doing the exec in the caller)."""
        try:
            exec(self.code, self.globals)  # noqa: S102 -- running the program is the point
        except BaseException as exc:  # noqa: BLE001
            return self.ended(exc)
        return 0

    def ended(self, exc: BaseException) -> int:
        """The exit status after ``exc`` escaped the program; SystemExit and
        KeyboardInterrupt are raised again, for the interpreter to handle as usual."""
        finisher = self.finisher
        if isinstance(exc, SystemExit):
            code = exc.code
            finisher.succeeded = code is None or (isinstance(code, int) and code == 0)
            raise exc  # the interpreter handles it exactly as it would for a plain run
        if isinstance(exc, KeyboardInterrupt):
            report_uncaught(exc)
            # Let it leave heatline's main: since 3.8 the interpreter then finishes as usual
            # (non-daemon threads, atexit, so the profile; finalizers, buffered files) and
            # only then kills itself with SIGINT, exactly as it does for the program run
            # alone. Python prints it once more on the way out; that print is skipped.
            finisher.succeeded = False
            finisher.interrupted = True
            sys.excepthook = SkipOnce(exc, sys.excepthook)
            raise exc
        report_uncaught(exc)  # whatever else escapes the program is reported
        finisher.succeeded = False
        return 1


def _check_outfile_is_not_the_program(outfile: str | None, program_file: Any) -> None:
    if not outfile or not isinstance(program_file, str):
        return
    try:
        same = os.path.samefile(outfile, program_file)
    except OSError:
        return
    if same:
        raise ProgramError(
            f"refusing to write the profile over the program itself ('{program_file}')", 2
        )


__all__ = ["Launch", "ProgramError", "run_module", "run_script", "start"]
