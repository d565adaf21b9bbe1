"""Run the user's program under the profiler, exactly as ``python script.py`` or
``python -m module`` would run it.

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
import contextlib
import os
import signal
import sys
import types
from typing import Any

# Few imports here, and none of json, dataclasses, inspect or traceback: whatever heatline holds
# in memory while the program runs, the program's own full garbage collections must walk too.

_HEATLINE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


class ProgramError(Exception):
    """The program cannot be started; str() is one line, shown after 'heatline: error: '."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class Options:
    """How to profile and what to do with the profile; filled in by the CLI."""

    def __init__(
        self,
        outfile: str | None = None,
        quiet: bool = False,
        reduced: bool = False,
        threshold_pct: float = 1.0,
        interval_s: float = 0.01,
        profile_all: bool = False,
        only: list[str] | None = None,
        exclude: list[str] | None = None,
        paused: bool = False,
        memory_window: int = 0,  # bytes between memory samples on average; 0: CPU only
        gpu: int = 0,  # 0 off, 1 on, 2 auto
    ) -> None:
        self.outfile = outfile
        self.quiet = quiet
        self.reduced = reduced
        self.threshold_pct = threshold_pct
        self.interval_s = interval_s
        self.profile_all = profile_all
        self.only = list(only or [])
        self.exclude = list(exclude or [])
        self.paused = paused
        self.memory_window = memory_window
        self.gpu = gpu


class _Program:
    """Everything needed to run the program, worked out before anything runs."""

    def __init__(
        self,
        code: types.CodeType,
        label: str,  # the profile's "program": absolute script path or "-m module"
        argv: list[str],
        path0: str,  # what Python would put in sys.path[0]
        module_attrs: dict[str, Any],  # dunder attributes of the fresh __main__ module
    ) -> None:
        self.code = code
        self.label = label
        self.argv = argv
        self.path0 = path0
        self.module_attrs = module_attrs


def run_script(script: str, args: list[str], options: Options) -> int:
    """Profile ``python script args...``; returns the exit status (or raises SystemExit)."""
    path = os.path.abspath(script)
    if os.path.isdir(path) or (not path.endswith(".py") and _is_zipfile(path)):
        # Like Python: a directory or zip archive runs its __main__ module, found through
        # sys.path[0] (the path as given, made absolute; not resolved through symlinks).
        _set_path0(path, always=True)
        program = _main_module_of_path(script, args, path)
    else:
        program = _compile_script(script, args, path)
        _set_path0(program.path0)
    return _run(program, options)


def run_module(module: str, args: list[str], options: Options) -> int:
    """Profile ``python -m module args...``; returns the exit status (or raises SystemExit)."""
    # python -m searches the current directory first; set that before looking the module up.
    _set_path0(os.getcwd())
    import runpy

    try:
        # runpy's own lookup gives python's exact behaviour and messages for packages,
        # namespace packages and missing modules.
        _, spec, code = runpy._get_module_details(module, runpy._Error)  # type: ignore
    except runpy._Error as exc:  # type: ignore[attr-defined]
        raise ProgramError(str(exc), 1) from None
    except SyntaxError as exc:
        _print_syntax_error(exc)
        raise SystemExit(1) from None
    except Exception as exc:  # noqa: BLE001 -- raised by a parent package's own code
        _report_uncaught(exc)
        raise SystemExit(1) from None
    program = _Program(
        code=code,
        label=f"-m {module}",
        argv=[spec.origin, *args],
        path0=os.getcwd(),
        module_attrs=_module_attrs(spec),
    )
    return _run(program, options)


def _is_zipfile(path: str) -> bool:
    import zipfile

    try:
        return zipfile.is_zipfile(path)
    except OSError:
        return False


def _set_path0(path0: str, *, always: bool = False) -> None:
    """Put the program's directory where heatline's own entry is (python put heatline's
    directory, or the current one for ``-m heatline``, in sys.path[0])."""
    if getattr(sys.flags, "safe_path", False) or sys.flags.isolated:
        # Under -P / -I python adds no script directory (so there is no heatline entry to
        # replace), except the directory or zip archive a program is run from.
        if always:
            sys.path.insert(0, path0)
        return
    if sys.path:
        sys.path[0] = path0
    else:
        sys.path.insert(0, path0)


def _compile_script(script: str, args: list[str], path: str) -> _Program:
    try:
        with open(path, "rb") as f:
            source = f.read()
    except OSError as exc:
        raise ProgramError(
            f"can't open file '{path}': [Errno {exc.errno}] {exc.strerror}", 2
        ) from None
    try:
        # Compiled with the absolute file name, as python does, so tracebacks and linecache
        # find the source.
        code = compile(source, path, "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as exc:  # ValueError: null bytes before 3.12
        _print_syntax_error(exc)
        raise SystemExit(1) from None
    from importlib.machinery import SourceFileLoader

    return _Program(
        code=code,
        label=path,
        argv=[script, *args],
        path0=os.path.dirname(os.path.realpath(path)),
        module_attrs={
            "__file__": path,
            "__cached__": None,
            "__loader__": SourceFileLoader("__main__", path),
            "__spec__": None,
            "__package__": None,
        },
    )


def _main_module_of_path(script: str, args: list[str], path: str) -> _Program:
    import runpy

    try:
        _, spec, code = runpy._get_main_module_details(runpy._Error)  # type: ignore
    except runpy._Error as exc:  # type: ignore[attr-defined]
        raise ProgramError(str(exc), 1) from None
    except SyntaxError as exc:
        _print_syntax_error(exc)
        raise SystemExit(1) from None
    return _Program(
        code=code,
        label=path,
        argv=[script, *args],
        path0=path,
        module_attrs=_module_attrs(spec),
    )


def _module_attrs(spec: Any) -> dict[str, Any]:
    # What runpy gives a module run as __main__.
    return {
        "__file__": spec.origin,
        "__cached__": spec.cached,
        "__loader__": spec.loader,
        "__spec__": spec,
        "__package__": spec.parent,
    }


def _print_syntax_error(exc: BaseException) -> None:
    import traceback

    sys.stderr.write("".join(traceback.format_exception_only(type(exc), exc)))
    sys.stderr.flush()


def _run(program: _Program, options: Options) -> int:
    from heatline.session import Session

    main = types.ModuleType("__main__")
    main.__dict__.update(program.module_attrs)
    main.__dict__["__builtins__"] = builtins
    sys.modules["__main__"] = main  # a fresh module, so pickle finds __main__ classes
    sys.argv = list(program.argv)

    session = Session(
        program=program.label,
        argv=program.argv,
        interval_s=options.interval_s,
        profile_all=options.profile_all,
        only=options.only,
        exclude=options.exclude,
        paused=options.paused,
        memory_window=options.memory_window,
        gpu=options.gpu,
    )
    finisher = _Finisher(session, options)
    atexit.register(finisher)
    try:
        session.start()
    except (RuntimeError, OSError) as exc:
        atexit.unregister(finisher)
        raise ProgramError(f"could not start the profiler: {exc}", 1) from None

    try:
        exec(program.code, main.__dict__)  # noqa: S102 -- running the program is the point
    except SystemExit:
        raise  # the interpreter handles it exactly as it would for a plain run
    except KeyboardInterrupt as exc:
        _report_uncaught(exc)
        finisher.die_of_sigint = True  # after the profile is written, like python's Ctrl-C exit
        return 130
    except BaseException as exc:  # noqa: BLE001 -- whatever escapes the program is reported
        _report_uncaught(exc)
        return 1
    return 0


def _is_internal(frame: types.FrameType) -> bool:
    """Frames of heatline itself, or of runpy (which finds -m modules), as python hides its own."""
    filename = frame.f_code.co_filename
    if filename.startswith(_HEATLINE_DIR) or filename == "<frozen runpy>":
        return True
    runpy = sys.modules.get("runpy")
    return runpy is not None and filename == getattr(runpy, "__file__", None)


def _report_uncaught(exc: BaseException) -> None:
    """Print an uncaught exception the way the interpreter does, minus heatline's frames."""
    tb = exc.__traceback__
    while tb is not None and _is_internal(tb.tb_frame):
        tb = tb.tb_next
    exc = exc.with_traceback(tb)
    sys.last_type, sys.last_value, sys.last_traceback = type(exc), exc, tb
    if sys.version_info >= (3, 12):
        sys.last_exc = exc
    try:
        sys.excepthook(type(exc), exc, tb)
    except BaseException:  # noqa: BLE001
        # A broken user excepthook: fall back to the default one, as the interpreter does.
        sys.__excepthook__(type(exc), exc, tb)
    finally:
        del exc, tb  # break the frame <-> traceback cycle


class _Finisher:
    """The atexit handler that stops the engine and writes the profile and report."""

    def __init__(self, session: Any, options: Options) -> None:
        self.session = session
        self.options = options
        self.die_of_sigint = False
        # A forked child inherits atexit handlers; only the profiled process may write.
        self.pid = os.getpid()

    def __call__(self) -> None:
        if os.getpid() != self.pid:
            return
        try:
            self.session.stop()
            profile = self.session.profile()
            if self.options.outfile:
                from heatline.profile import dump

                dump(profile, self.options.outfile)
            if not self.options.quiet:
                from heatline.renderers.terminal import render

                _flush(sys.stdout)  # the report comes after everything the program printed
                render(
                    profile,
                    file=sys.stderr,
                    reduced=self.options.reduced,
                    threshold_pct=self.options.threshold_pct,
                )
        except KeyboardInterrupt:
            _internal_error("interrupted while writing the profile")
        except BaseException as exc:  # noqa: BLE001 -- never change the program's exit status
            _internal_error(_one_line(exc))
        if self.die_of_sigint:
            _die_of_sigint()


def _one_line(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return " ".join(text.split())


def _internal_error(message: str) -> None:
    with contextlib.suppress(Exception):  # stderr itself may be gone; nothing left to do
        sys.stderr.write(f"heatline: internal error: {message}\n")
        sys.stderr.flush()


def _flush(stream: Any) -> None:
    with contextlib.suppress(Exception):  # a closed or broken stream must not stop the exit
        if stream is not None:
            stream.flush()


def _die_of_sigint() -> None:
    """End the process by SIGINT, as python does after an uncaught KeyboardInterrupt, so the
    parent (a shell, say) sees that the program was interrupted."""
    if os.name != "posix":
        return  # the exit status 130 set by the runner is the closest equivalent
    _flush(sys.stdout)
    _flush(sys.stderr)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGINT)
