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
import os
import sys
import types

from heatline.options import Options

# typing only for the annotations (strings here): importing it costs a child process about
# 10 ms (re, functools, collections...), and this module is on a child's start path (for
# _SigtermGuard); so is contextlib (3 ms: collections, functools), which it does without.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# Few imports here, and none of json, dataclasses, inspect or traceback: whatever heatline holds
# in memory while the program runs, the program's own full garbage collections must walk too.

_HEATLINE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _startup_modules() -> frozenset[str]:
    """The modules the interpreter itself imported before running heatline's entry point
    (``python -m heatline`` or the ``heatline`` script): those a plain ``python script.py``
    has too. sys.modules keeps the order in which imports completed, and the last import of
    the interpreter's start-up is site (which runs .pth files and sitecustomize inside its
    own import); without site (-S), the last is __main__'s creation."""
    names = list(sys.modules)
    last = "site" if "site" in sys.modules else "__main__"
    end = names.index(last) + 1 if last in sys.modules else 0
    return frozenset(names[:end])


# Worked out when the CLI first imports this module, before anything of the program exists.
_STARTUP_MODULES = _startup_modules()
# Where heatline's own late imports (json, rich, ...) are found: sys.path without the entry's
# directory (the current one for -m, the script's bin directory), which is the program's
# directory once it runs.
_OWN_PATH = list(sys.path if getattr(sys.flags, "safe_path", False) or sys.flags.isolated
                 else sys.path[1:])


# The exit status when the program succeeded but its profile could not be written.
WRITE_FAILED_STATUS = 1


class ProgramError(Exception):
    """The program cannot be started; str() is one line, shown after 'heatline: error: '."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


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


def run_script(script: str, args: list[str], options: Options) -> Launch:
    """Prepare to profile ``python script args...``: the profiler is started."""
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


def run_module(module: str, args: list[str], options: Options) -> Launch:
    """Prepare to profile ``python -m module args...``: the profiler is started."""
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
    from importlib.machinery import SourceFileLoader, SourcelessFileLoader

    if path.endswith(".pyc"):
        code, loader = _unmarshal_pyc(path, source), SourcelessFileLoader("__main__", path)
    else:
        try:
            # Compiled with the absolute file name, as python does, so tracebacks and
            # linecache find the source.
            code = compile(source, path, "exec", dont_inherit=True)
        except (SyntaxError, ValueError) as exc:  # ValueError: null bytes before 3.12
            _print_syntax_error(exc)
            raise SystemExit(1) from None
        loader = SourceFileLoader("__main__", path)
    return _Program(
        code=code,
        label=path,
        argv=[script, *args],
        path0=os.path.dirname(os.path.realpath(path)),
        module_attrs={
            "__file__": path,
            "__cached__": None,
            "__loader__": loader,
            "__spec__": None,
            "__package__": None,
        },
    )


def _unmarshal_pyc(path: str, data: bytes) -> types.CodeType:
    """The code of a compiled script, as python runs one (Python/pythonrun.c, run_pyc_file)."""
    import marshal
    from importlib.util import MAGIC_NUMBER

    if data[:4] != MAGIC_NUMBER:
        raise ProgramError(f"'{path}': bad magic number in .pyc file", 1)
    try:
        code = marshal.loads(data[16:])  # after the magic number, flags and source stamp
    except (EOFError, ValueError, TypeError):
        code = None
    if not isinstance(code, types.CodeType):
        raise ProgramError(f"'{path}': bad code object in .pyc file", 1)
    return code


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


def _run(program: _Program, options: Options) -> Launch:
    from heatline.engine.session import Session

    _check_outfile_is_not_the_program(options.outfile, program.module_attrs.get("__file__"))
    main = types.ModuleType("__main__")
    main.__dict__.update(program.module_attrs)
    main.__dict__["__builtins__"] = builtins
    sys.modules["__main__"] = main  # a fresh module, so pickle finds __main__ classes
    sys.argv = list(program.argv)

    session = Session(program=program.label, argv=program.argv, **options.session_arguments())
    from heatline.engine import marked

    marked.install(builtins)  # @profile: the one builtin heatline adds (heatline/marked.py)
    session.snapshot_filter = marked.keep_marked
    finisher = _Finisher(session, options)
    atexit.register(finisher)
    try:
        session.start()
    except (RuntimeError, OSError) as exc:
        atexit.unregister(finisher)
        raise ProgramError(f"could not start the profiler: {exc}", 1) from None

    if not options.no_children:
        program_path = list(sys.path)
        sys.path[:] = _OWN_PATH  # heatline's imports, never the program's json.py, random.py
        try:
            from heatline.run import children

            children.enable(options.session_arguments())
        finally:
            sys.path[:] = program_path
    finisher.own_modules = _set_aside_own_modules()
    _SigtermGuard(finisher).install()
    if not options.no_children:
        children.install()  # its fork hook must run after the guard's (in a child)
    if options.profile_interval is not None and options.outfile:
        session.every(options.profile_interval, finisher.write_so_far)
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
            _report_uncaught(exc)
            # Let it leave heatline's main: since 3.8 the interpreter then finishes as usual
            # (non-daemon threads, atexit, so the profile; finalizers, buffered files) and
            # only then kills itself with SIGINT, exactly as it does for the program run
            # alone. Python prints it once more on the way out; that print is skipped.
            finisher.succeeded = False
            finisher.interrupted = True
            sys.excepthook = _SkipOnce(exc, sys.excepthook)
            raise exc
        _report_uncaught(exc)  # whatever else escapes the program is reported
        finisher.succeeded = False
        return 1


def _set_aside_own_modules() -> dict[str, Any]:
    """Take the modules only heatline imported out of sys.modules, so the program imports its
    own (a local re.py, typing.py, signal.py...) exactly as under python; heatline keeps its
    references to them. Returns sys.modules as it was, for heatline's work at exit.

    Kept: heatline's own package (the program may call heatline.pause()), and modules built
    into the interpreter, which no file can shadow.
    """
    own = dict(sys.modules)
    # Modules whose functions heatline wrapped to follow child processes stay too.
    wrapped = getattr(sys.modules.get("heatline.run.children"), "WRAPPED_MODULES", ())
    for name in own:
        if name in _STARTUP_MODULES or name in sys.builtin_module_names or name in wrapped:
            continue
        if _is_heatline(name) or name == "__main__":
            continue
        del sys.modules[name]
    return own


def _is_heatline(name: str) -> bool:
    return name == "heatline" or name.startswith("heatline.")


class _own_imports:  # noqa: N801 -- used as a function: with _own_imports(...)
    """While heatline finishes: imports resolve to heatline's dependencies, never the
    program's directory or the program's modules of the same name (json.py, rich.py); then
    the program's sys.path and sys.modules are put back as they were, for the rest of its
    shutdown. (sys.modules is changed in place: the import system holds that very dict.)"""

    def __init__(self, own_modules: dict[str, Any]) -> None:
        self.own_modules = own_modules

    def __enter__(self) -> None:
        self.program_modules = program_modules = dict(sys.modules)
        self.program_path = list(sys.path)
        try:
            sys.modules.clear()
            sys.modules.update(self.own_modules)
            # heatline's own modules stay one copy, whoever imported them first.
            sys.modules.update(
                (name, module) for name, module in program_modules.items() if _is_heatline(name)
            )
            sys.path[:] = _OWN_PATH
        except BaseException:
            self.__exit__()
            raise

    def __exit__(self, *exc_info: Any) -> None:
        sys.path[:] = self.program_path
        sys.modules.clear()
        sys.modules.update(self.program_modules)


class _SkipOnce:
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


def _is_internal(frame: types.FrameType) -> bool:
    """Frames of heatline itself, or of runpy (which finds -m modules), as python hides its own."""
    filename = frame.f_code.co_filename
    if filename.startswith(_HEATLINE_DIR) or filename == "<frozen runpy>":
        return True
    runpy = sys.modules.get("runpy")
    return runpy is not None and filename == getattr(runpy, "__file__", None)


def _program_part(tb: Any) -> Any:
    """A traceback without its leading heatline (and runpy) frames."""
    while tb is not None and _is_internal(tb.tb_frame):
        tb = tb.tb_next
    return tb


def _report_uncaught(exc: BaseException) -> None:
    """Print an uncaught exception the way the interpreter does, minus heatline's frames."""
    tb = _program_part(exc.__traceback__)
    exc = exc.with_traceback(tb)
    sys.last_type, sys.last_value, sys.last_traceback = type(exc), exc, tb
    if sys.version_info >= (3, 12):
        sys.last_exc = exc
    try:
        sys.excepthook(type(exc), exc, tb)
    except BaseException as hook_exc:  # noqa: BLE001
        # A broken user excepthook: say so and fall back to the default hook, in the
        # interpreter's words (Python/pythonrun.c).
        _flush(sys.stdout)
        sys.stderr.write("Error in sys.excepthook:\n")
        hook_exc.__context__ = None  # the interpreter calls the hook outside any handler
        hook_tb = _program_part(hook_exc.__traceback__)
        sys.__excepthook__(type(hook_exc), hook_exc.with_traceback(hook_tb), hook_tb)
        sys.stderr.write("\nOriginal exception was:\n")
        sys.__excepthook__(type(exc), exc, tb)
        del hook_exc, hook_tb
    finally:
        del exc, tb  # break the frame <-> traceback cycle


class _Finisher:
    """The atexit handler that stops the engine and writes the profile and report."""

    def __init__(self, session: Any, options: Options) -> None:
        self.session = session
        self.options = options
        self.succeeded = True  # False once the program's exit status is known to be non-zero
        self.interrupted = False  # the program ended by an uncaught KeyboardInterrupt
        self.warned = False  # --profile-interval: a failed write was reported
        self.own_modules: dict[str, Any] = dict(sys.modules)  # sys.modules for heatline's work
        # A forked child inherits atexit handlers; only the profiled process may write.
        self.pid = os.getpid()

    def __call__(self) -> None:
        if os.getpid() != self.pid:
            return
        try:
            with _own_imports(self.own_modules):
                self._finish()
        finally:
            children = sys.modules.get("heatline.run.children")
            if children is not None:
                children.discard()  # merged already, unless building the profile failed
            if self.interrupted:
                _rearm_sigint_exit()

    def _finish(self) -> None:
        try:
            self.session.stop()
            profile = self.session.profile()
            children = sys.modules.get("heatline.run.children")
            if children is not None:
                profile = children.collect(profile)
            if self.options.use_virtual_time:
                from heatline.data.virtual_time import running_time_only

                running_time_only(profile)
            if self.options.outfile:
                if not self._write(profile, self.options.outfile):
                    return
            if not self.options.quiet:
                from heatline.renderers.terminal import render

                with _stderr_fd() as stream:
                    render(
                        profile,
                        file=stream,
                        reduced=self.options.reduced_profile,
                        threshold_pct=self.options.cpu_percent_threshold,
                        malloc_threshold=self.options.malloc_threshold,
                    )
        except KeyboardInterrupt:
            _internal_error("interrupted while writing the profile")
        except BaseException as exc:  # noqa: BLE001 -- never change the program's exit status
            _internal_error(_one_line(exc))

    def write_so_far(self) -> None:
        """--profile-interval: write the profile of the run so far to -o, replacing the file
        whole. Called by the engine in the main thread, between two of the program's
        instructions, with the engine paused. A failure is one warning line and the program
        goes on; KeyboardInterrupt or SystemExit (from the program's own signal handlers,
        which may run meanwhile) is the program's and goes through."""
        if os.getpid() != self.pid:
            return
        try:
            with _own_imports(self.own_modules):
                from heatline.renderers import render_to

                profile = self.session.profile()
                if self.options.use_virtual_time:
                    from heatline.data.virtual_time import running_time_only

                    running_time_only(profile)
                render_to(profile, self.options.format, self.options.outfile)
        except Exception as exc:  # noqa: BLE001 -- the program must go on
            if not self.warned:  # once: a full disk would otherwise say so every period
                self.warned = True
                reason = _one_line(exc)
                _write_stderr(f"heatline: warning: can't write the profile so far: {reason}\n")

    def _write(self, profile: Any, path: str) -> bool:
        """Write the profile; if that fails, say so in one line and, when the program itself
        succeeded, end the process with status 1 (the interpreter's exit status can no longer
        be changed from an atexit handler, so what is left of its shutdown is skipped)."""
        from heatline.renderers import render_to

        try:
            render_to(profile, self.options.format, path)
            return True
        except OSError as exc:
            reason = f"[Errno {exc.errno}] {exc.strerror}" if exc.strerror else _one_line(exc)
            _write_stderr(f"heatline: error: can't write the profile to '{path}': {reason}\n")
            if self.succeeded:
                os._exit(WRITE_FAILED_STATUS)
            return False


_terminating = False  # set when the profiled process is about to die of SIGTERM


class _SigtermGuard:
    """Write the profile when SIGTERM kills the program (a scheduler's timeout, ``kill``),
    then die of SIGTERM as python would, while the program sees SIGTERM exactly as under
    python.

    heatline's handler is installed only while the program's disposition for SIGTERM is the
    default one. ``signal.signal`` and ``signal.getsignal`` (the ``signal`` module calls the
    ``_signal`` functions replaced here, at each call) answer as if that disposition were
    SIG_DFL: the program installing its own handler gets SIG_DFL back and its handler runs as
    usual; setting SIG_DFL again puts heatline's back. A forked child gets the plain default.
    A Python-level handler runs when the main thread next runs Python code: a program stuck
    in a long C call dies when that call returns (python: at once); a C-level ``sigaction``
    handler would not have that delay (docs/design.md, known limits).
    """

    def __init__(self, finisher: Any) -> None:
        import _signal

        self._module = _signal
        self._signal = _signal.signal
        self._getsignal = _signal.getsignal
        self.finisher = finisher
        self.armed = False

    def install(self, at_fork: bool = True) -> None:
        module = self._module
        if not hasattr(module, "SIGTERM") or not hasattr(os, "register_at_fork"):
            return
        try:
            if self._getsignal(module.SIGTERM) != module.SIG_DFL:
                return  # ignored (nohup, a parent's choice): nothing to do, as under python
            self._signal(module.SIGTERM, self._on_sigterm)
        except (ValueError, OSError):  # not the main thread, or not allowed
            return
        self.armed = True
        module.signal, module.getsignal = self.signal, self.getsignal
        if at_fork:
            os.register_at_fork(after_in_child=self._in_child)

    def signal(self, signalnum: Any, handler: Any) -> Any:
        module = self._module
        if signalnum != module.SIGTERM:
            return self._signal(signalnum, handler)
        default = handler is module.SIG_DFL or (isinstance(handler, int) and handler == 0)
        previous = self._signal(signalnum, self._on_sigterm if default else handler)
        was_armed, self.armed = self.armed, default
        return module.SIG_DFL if was_armed else previous

    def getsignal(self, signalnum: Any) -> Any:
        if signalnum == self._module.SIGTERM and self.armed:
            return self._module.SIG_DFL
        return self._getsignal(signalnum)

    def _in_child(self) -> None:
        module = self._module
        if self.armed:
            try:
                self._signal(module.SIGTERM, module.SIG_DFL)
            except (ValueError, OSError):
                pass
        self.armed = False
        module.signal, module.getsignal = self._signal, self._getsignal

    def _on_sigterm(self, signum: int, frame: Any) -> None:
        global _terminating
        module = self._module
        # Ignored while the profile is written (a second SIGTERM must not cut it short).
        self._signal(module.SIGTERM, module.SIG_IGN)
        if os.getpid() == self.finisher.pid:
            _terminating = True
            self.finisher.succeeded = False
            self.finisher()
            self.finisher.pid = -1  # written: the atexit handler must not write it again
        self._signal(module.SIGTERM, module.SIG_DFL)
        os.kill(os.getpid(), module.SIGTERM)


def _one_line(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return " ".join(text.split())


def _internal_error(message: str) -> None:
    _write_stderr(f"heatline: internal error: {message}\n")


def _stderr_fd() -> Any:
    """A text stream on file descriptor 2 (use it in a with statement, which closes the stream
    and leaves the descriptor open), for what heatline writes at exit: the process's stderr,
    wherever the program pointed sys.stderr (into its log, None, stdout). Whatever the
    program's streams hold is flushed first, so heatline's text comes after it."""
    if not _terminating:  # killed by SIGTERM, python would not flush them: neither do we
        for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
            _flush(stream)
    encoding = getattr(sys.__stderr__, "encoding", None) or "utf-8"
    return open(2, "w", encoding=encoding, errors="backslashreplace", closefd=False)


def _write_stderr(text: str) -> None:
    try:
        with _stderr_fd() as stream:
            stream.write(text)
    except Exception:  # noqa: BLE001 -- stderr itself may be gone; nothing left to do
        pass


def _flush(stream: Any) -> None:
    try:
        if stream is not None:
            stream.flush()
    except Exception:  # noqa: BLE001 -- a closed or broken stream must not stop the exit
        pass


def _rearm_sigint_exit() -> None:
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
