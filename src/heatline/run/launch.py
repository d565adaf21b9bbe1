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
from heatline.run import follow, handover
from heatline.run.isolation import OWN_PATH, set_aside_own_modules
from heatline.run.errors import SkipOnce, report_uncaught
from heatline.run.finish import Finisher, wrap_os_exit
from heatline.run.program import Program, ProgramError, find_module, find_script
from heatline.run.output import flush
from heatline.run.sigterm import SigtermGuard

# typing only for type checkers: a run's path imports none (heatline/__init__.py).
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
    from heatline.engine.session import Session, fresh_stack_main

    _check_outfile_is_not_the_program(options.outfile, program.file)
    main = _fresh_main_module(program.module_attrs)
    sys.modules["__main__"] = main  # a fresh module, so pickle finds __main__ classes
    sys.argv = list(program.argv)

    session = Session(program=program.label, argv=program.argv, **options.session_arguments())
    if program.runpy_main is not None and program.runpy_main[1]:
        # python -m: runpy puts the module's file in sys.argv[0] once it has found it.
        session.argv0 = _spec_origin(main)
    from heatline.engine import marked

    marked.install(builtins)  # @profile: the one builtin heatline adds (engine/marked.py)
    session.snapshot_filter = marked.keep_marked
    finisher = Finisher(session, options)
    if options.pprof_server is not None:  # the address is had before anything starts
        program_path = list(sys.path)
        sys.path[:] = OWN_PATH  # what the server runs is heatline's, never the program's gzip.py
        try:
            from heatline.serve import PprofServer, ServerError
        finally:
            sys.path[:] = program_path
        try:
            finisher.server = PprofServer(*options.pprof_server, session.profile)
        except ServerError as exc:
            raise ProgramError(str(exc), 1) from None
    atexit.register(finisher)
    try:
        session.start()
    except (RuntimeError, OSError) as exc:
        atexit.unregister(finisher)
        if finisher.server is not None:
            finisher.server.close()
        raise ProgramError(f"could not start the profiler: {exc}", 1) from None

    # Children followed unless --no-children; an exec of this process hands the run over or
    # ends it (handover.py) in any case.
    program_path = list(sys.path)
    sys.path[:] = OWN_PATH  # heatline's imports, never the program's json.py, random.py
    try:
        carrier = carriers.enable(options, finisher, handover.before_exec,
                                   session.start_epoch)
    finally:
        sys.path[:] = program_path
    if carrier.config.get("dir") and not options.no_children:
        # a step window's state, for the children to follow (session.announce_window)
        session.announce_window(os.path.join(carrier.config["dir"], f"{os.getpid()}.window"))
    # The modules heatline wrapped a function of stay, or the program would import fresh,
    # unwrapped copies.
    wrapped = () if options.no_children else carriers.WRAPPED_MODULES
    finisher.own_modules = set_aside_own_modules(wrapped)
    SigtermGuard(finisher).install()
    wrap_os_exit(finisher, carrier.real)
    follow.install(carrier)  # its fork hook must run after the guard's (in a child)
    if options.write_interval_s is not None and options.outfile:
        session.every(options.write_interval_s, finisher.write_so_far)
    if finisher.server is not None:
        finisher.server.start()
        if options.pprof_server[1] == 0:  # a port picked by the kernel: say which
            sys.stderr.write(f"heatline: pprof server on {finisher.server.url}\n")
            sys.stderr.flush()
    if program.runpy_main is None:
        return Launch(*fresh_stack_main(program.code, main.__dict__), finisher, flush_at_end=True)
    # python imports runpy once sys.path[0] is set, among the program's modules, and runs
    # the program with runpy._run_module_as_main, which looks it up (importing its parent
    # packages) and executes it: the same call here, so that the lookup is the program's (its
    # imports stay in sys.modules; profiled) and its tracebacks show runpy's frames, python's.
    import runpy

    return Launch(*fresh_stack_main(runpy._run_module_as_main, *program.runpy_main), finisher,
                  flush_at_end=False)


def _fresh_main_module(attrs: dict[str, Any]) -> types.ModuleType:
    """A ``__main__`` module as the interpreter makes one (Python/pylifecycle.c,
    add_main_module: the module, then ``__annotations__``, an empty dict before 3.14 (PEP
    526), ``__builtins__`` and ``__loader__``), then given what python's script runner sets
    (``attrs``); runpy sets its own when it runs a module. The same keys in the same order:
    ``globals()`` lists them."""
    from importlib.machinery import BuiltinImporter

    main = types.ModuleType("__main__")
    namespace = main.__dict__
    if sys.version_info < (3, 14):  # 3.14 evaluates annotations lazily (PEP 649, 749)
        namespace["__annotations__"] = {}
    namespace["__builtins__"] = builtins
    namespace["__loader__"] = BuiltinImporter
    namespace.update(attrs)
    return main


def _spec_origin(main: types.ModuleType) -> Any:
    """The file runpy found for ``-m module`` (from the program's __main__, once set), held
    through a weak reference: heatline must not keep the program's __main__ alive."""
    from _weakref import ref

    main_ref = ref(main)

    def origin() -> Any:
        spec = getattr(main_ref(), "__spec__", None)
        return getattr(spec, "origin", None)

    return origin


class Launch:
    """A program ready to run, the profiler started: ``launch.main(*launch.take())``, then
    ``launch.ended(exc)`` with whatever escaped it (None if nothing did).

    ``main`` runs the script's code, or runpy's ``_run_module_as_main`` for a module, a
    directory or a zip archive, as python runs them, on a fresh frame stack
    (engine/session.py, fresh_stack_main): the program sees none of heatline's frames below its
    own (sys._getframe(), faulthandler, the recursion limit, warnings' stacklevel)."""

    def __init__(
        self, main: Any, arguments: tuple[Any, ...], finisher: Any, *, flush_at_end: bool
    ) -> None:
        self.main = main
        self.arguments: tuple[Any, ...] | None = arguments
        self.finisher = finisher
        self.flush_at_end = flush_at_end

    def take(self) -> tuple[Any, ...]:
        """The arguments for ``main``, given once: heatline keeps no reference to the
        program's globals (they must go when python would free them, at shutdown)."""
        arguments, self.arguments = self.arguments, None
        assert arguments is not None, "the program runs once"
        return arguments

    def run(self) -> int:
        """Run the program here (one frame deeper than doing the call in the caller)."""
        try:
            self.main(*self.take())
        except BaseException as exc:  # noqa: BLE001
            return self.ended(exc)
        return self.ended(None)

    def ended(self, exc: BaseException | None) -> int:
        """The exit status after ``exc`` escaped the program (None: it returned);
        SystemExit and KeyboardInterrupt are raised again, for the interpreter to handle as
        usual."""
        if self.flush_at_end:
            # What python's script runner does once the script's code is done, before it
            # prints what escaped (Python/pythonrun.c, flush_io): the program's buffered
            # output then comes before its traceback or exit message.
            flush(sys.stderr)
            flush(sys.stdout)
        finisher = self.finisher
        if exc is None:
            finisher.exit = "exit 0"
            return 0
        if isinstance(exc, SystemExit):
            code = exc.code
            finisher.succeeded = code is None or (isinstance(code, int) and code == 0)
            # The status python exits with: the int (as a wait sees it), else 0 for None and 1
            # for anything else (printed).
            status = 0 if code is None else code & 0xFF if isinstance(code, int) else 1
            finisher.exit = f"exit {status}"
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
        finisher.exit = "exit 1"
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
