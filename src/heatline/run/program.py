"""Finding the program: what ``python script.py``, ``python -m module``, ``python dir/`` or
``python app.pyz`` would run, with python's own lookup and messages, before anything runs."""

from __future__ import annotations

import os
import sys
import types

from heatline.run.errors import print_syntax_error

# typing only for type checkers: a run's path imports none (heatline/__init__.py).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class ProgramError(Exception):
    """The program cannot be started; str() is one line, shown after 'heatline: error: '."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class Program:
    """Everything needed to run the program, worked out before anything runs."""

    def __init__(
        self,
        code: types.CodeType | None,  # None: runpy looks the module up and runs it
        label: str,  # the profile's "program": absolute script path or "-m module"
        argv: list[str],  # sys.argv when it starts (runpy replaces "-m" with the file)
        path0: str,  # what Python would put in sys.path[0]
        module_attrs: dict[str, Any],  # dunder attributes of the fresh __main__ module
        file: str | None = None,  # the program's file, where known before it runs
        runpy_main: tuple[str, bool] | None = None,
    ) -> None:
        self.code = code
        self.label = label
        self.argv = argv
        self.path0 = path0
        self.module_attrs = module_attrs
        self.file = file
        # What python passes to runpy._run_module_as_main for ``-m module`` (the module, and
        # True: sys.argv[0] becomes its file) or a directory or zip archive ("__main__",
        # False), or None for a script, which python executes itself (Python/pythonrun.c).
        # Python's runner flushes sys.stderr and sys.stdout when a script's code ends, before
        # printing what it raised; runpy's caller does not (Modules/main.c, pymain_run_module).
        self.runpy_main = runpy_main


def find_script(script: str, args: list[str]) -> Program:
    """What ``python script args...`` would run (sys.path[0] is set, as python sets it).
    A name without a slash that is no file here is looked up on PATH, as a shell would run
    it: a Python script found there (a console script, a ``#!...python`` script) runs as its
    shebang's interpreter would run it, ``sys.argv[0]`` the path the shell would give it."""
    path = os.path.abspath(script)
    if os.sep not in script and not os.path.lexists(path):
        script = _python_command(script, path)
        path = os.path.abspath(script)
    if os.path.isdir(path) or (not path.endswith(".py") and _is_zipfile(path)):
        # Like Python: a directory or zip archive runs its __main__ module, found through
        # sys.path[0] (the path as given, made absolute; not resolved through symlinks).
        set_path0(path, always=True)
        program = _main_module_of_path(script, args, path)
    else:
        program = _compile_script(script, args, path)
        set_path0(program.path0)
    return program


def find_module(module: str, args: list[str]) -> Program:
    """What ``python -m module args...`` would run (sys.path[0] is set, as python sets it).

    The module is looked up when it runs, by runpy, as python does: that lookup imports its
    parent packages, which are the program's work (profiled, and theirs to keep in
    sys.modules: a package's C extensions cannot be imported twice). Only a module whose
    top-level package does not exist is refused here, before anything runs (finding that
    out runs no code of the program's)."""
    # python -m searches the current directory first; set that before looking the module up.
    set_path0(os.getcwd())
    if not _top_level_exists(module):
        import runpy

        try:
            # runpy's own lookup gives python's exact message; with the top-level package
            # missing it imports nothing.
            runpy._get_module_details(module, runpy._Error)  # type: ignore[attr-defined]
        except runpy._Error as exc:  # type: ignore[attr-defined]
            raise ProgramError(str(exc), 1) from None
    return Program(
        code=None,
        label=f"-m {module}",
        argv=["-m", *args],  # python's sys.argv while it looks the module up
        path0=os.getcwd(),
        module_attrs={},  # runpy sets them (__file__, __spec__...), as under python
        file=_module_file(module),
        runpy_main=(module, True),
    )


def _top_level_exists(module: str) -> bool:
    top = module.partition(".")[0]
    if not top:
        return False  # a relative name: runpy refuses it
    from importlib.util import find_spec

    try:
        return find_spec(top) is not None  # a top-level name: nothing is imported
    except (ImportError, ValueError):
        return False


def _module_file(module: str) -> str | None:
    """The file ``python -m module`` would run, found without running any package (only to
    refuse ``-o`` naming it): each package's directories as found on sys.path. None where
    that is not enough to say (a package that changes its __path__, another finder)."""
    from importlib.machinery import PathFinder

    name, path, spec = "", None, None
    try:
        for part in module.split("."):
            name = f"{name}.{part}" if name else part
            spec = PathFinder.find_spec(name, path)
            if spec is None:
                return None
            path = spec.submodule_search_locations
        if path is not None:  # a package: python -m runs its __main__ module
            spec = PathFinder.find_spec(f"{name}.__main__", path)
    except (ImportError, ValueError, OSError):
        return None
    origin = getattr(spec, "origin", None)
    return origin if isinstance(origin, str) and os.path.isabs(origin) else None


def _is_zipfile(path: str) -> bool:
    import zipfile

    try:
        return zipfile.is_zipfile(path)
    except OSError:
        return False


def set_path0(path0: str, *, always: bool = False) -> None:
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


def which(name: str) -> str | None:
    """Where a shell finds the command ``name`` (no slash in it) on PATH: the first
    directory's executable file of that name, joined as the shell joins it (an empty entry
    is the current directory); None where there is none."""
    for directory in os.environ.get("PATH", os.defpath).split(os.pathsep):
        candidate = os.path.join(directory or ".", name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


# pip's launcher where the interpreter's path is too long for a shebang: "#!/bin/sh", then
# this line, which execs the interpreter on the script.
_SH_LAUNCHER = b"'''exec' "


def python_interpreter(path: str) -> str | None:
    """The interpreter a script's shebang names when it is a Python one (``#!/venv/bin/python``,
    ``#!/usr/bin/env python3``, or pip's ``#!/bin/sh`` launcher for a long path, whose second
    line execs python), else None (a shell script, a binary). A file named ``*.py`` without a
    shebang counts as Python ("python")."""
    try:
        with open(path, "rb") as f:
            head = f.read(1024)
    except OSError:
        return None
    lines = head.split(b"\n")
    if not lines[0].startswith(b"#!"):
        return "python" if path.endswith(".py") and b"\0" not in head else None
    words = lines[0][2:].split()
    if words and os.path.basename(words[0]) == b"env":  # env [-S] [NAME=VALUE...] python3
        words = [word for word in words[1:] if not word.startswith(b"-") and b"=" not in word]
    if (words and os.path.basename(words[0]) == b"sh" and len(lines) > 1
            and lines[1].startswith(_SH_LAUNCHER)):
        words = lines[1][len(_SH_LAUNCHER):].split()
    if words and os.path.basename(words[0]).startswith(b"python"):
        return os.fsdecode(words[0])
    return None


def _python_command(name: str, path: str) -> str:
    """The path of the Python script the command ``name`` runs (``heatline NAME`` where NAME
    is no file here), as the shell would find it on PATH; else a ProgramError: not found, or
    not Python."""
    found = which(name)
    if found is None:
        raise ProgramError(
            f"can't open file '{path}': [Errno 2] No such file or directory, nor is '{name}' "
            "a command on PATH", 2)
    interpreter = python_interpreter(found)
    if interpreter is None:
        raise ProgramError(
            f"'{name}' ({found}) is not a Python script; to profile the Python processes it "
            f"starts, run: heatline -- {name}", 2)
    own = other_interpreter(interpreter)
    if own is not None:
        sys.stderr.write(f"heatline: warning: {name}'s interpreter is {own}; it runs in "
                         f"heatline's, {sys.executable} (heatline -- {name} runs it in its "
                         "own)\n")
        sys.stderr.flush()
    return found


def other_interpreter(interpreter: str) -> str | None:
    """The interpreter a shebang names (a path, or a name looked up on PATH as env does), when
    it is not this one: another file in another directory (another environment); None when
    it is this one, or cannot be found."""
    path = interpreter if os.sep in interpreter else which(interpreter)
    if path is None or not sys.executable:
        return None
    try:
        if os.path.samefile(path, sys.executable) or os.path.samefile(
                os.path.dirname(os.path.abspath(path)), os.path.dirname(sys.executable)):
            return None  # this interpreter, or another name of it in its environment
    except OSError:
        return None
    return path


def _compile_script(script: str, args: list[str], path: str) -> Program:
    try:
        with open(path, "rb") as f:
            source = f.read()
    except OSError as exc:
        raise ProgramError(
            f"can't open file '{path}': [Errno {exc.errno}] {exc.strerror}", 2
        ) from None
    from importlib.machinery import SourceFileLoader, SourcelessFileLoader

    from heatline.engine.session import compile_program

    if path.endswith(".pyc"):
        code, loader = _unmarshal_pyc(path, source), SourcelessFileLoader("__main__", path)
    else:
        try:
            # Compiled with the absolute file name, as python does, so tracebacks and
            # linecache find the source.
            code = compile_program(source, path)
        except (SyntaxError, ValueError) as exc:  # ValueError: null bytes before 3.12
            print_syntax_error(exc)
            raise SystemExit(1) from None
        loader = SourceFileLoader("__main__", path)
    return Program(
        code=code,
        label=path,
        argv=[script, *args],
        path0=os.path.dirname(os.path.realpath(path)),
        file=path,
        module_attrs=_script_attrs(path, loader),
    )


def _script_attrs(path: str, loader: Any) -> dict[str, Any]:
    """What python's script runner puts in ``__main__`` (Python/pythonrun.c): ``__cached__``
    (None) before 3.15, which no longer sets it."""
    attrs: dict[str, Any] = {"__file__": path}
    if sys.version_info < (3, 15):
        attrs["__cached__"] = None
    attrs.update({"__loader__": loader, "__spec__": None, "__package__": None})
    return attrs


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


def _main_module_of_path(script: str, args: list[str], path: str) -> Program:
    import runpy

    try:
        # Looked up once here for python's messages when there is no __main__ module to run
        # (this lookup imports nothing); runpy looks it up again when it runs, as python does.
        _, spec, _ = runpy._get_main_module_details(runpy._Error)  # type: ignore
        file = spec.origin
    except runpy._Error as exc:  # type: ignore[attr-defined]
        raise ProgramError(str(exc), 1) from None
    except Exception:  # noqa: BLE001 -- a SyntaxError...: raised again, and printed as
        file = None  # python prints it (a traceback through runpy), when the program runs
    return Program(
        code=None,
        label=path,
        argv=[script, *args],
        path0=path,
        module_attrs={},  # runpy sets them, as under python
        file=file,
        runpy_main=("__main__", False),
    )
