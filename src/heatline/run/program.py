"""Finding the program: what ``python script.py``, ``python -m module``, ``python dir/`` or
``python app.pyz`` would run, with python's own lookup and messages, before anything runs."""

from __future__ import annotations

import os
import sys
import types

from heatline.run.errors import print_syntax_error, report_uncaught

# typing only for the annotations (strings here): importing it costs a child process about
# 10 ms (re, functools, collections...), and this module is on a child's start path.
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


def find_script(script: str, args: list[str]) -> Program:
    """What ``python script args...`` would run (sys.path[0] is set, as python sets it)."""
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
    """What ``python -m module args...`` would run (sys.path[0] is set, as python sets it)."""
    # python -m searches the current directory first; set that before looking the module up.
    set_path0(os.getcwd())
    import runpy

    try:
        # runpy's own lookup gives python's exact behaviour and messages for packages,
        # namespace packages and missing modules.
        _, spec, code = runpy._get_module_details(module, runpy._Error)  # type: ignore
    except runpy._Error as exc:  # type: ignore[attr-defined]
        raise ProgramError(str(exc), 1) from None
    except SyntaxError as exc:
        print_syntax_error(exc)
        raise SystemExit(1) from None
    except Exception as exc:  # noqa: BLE001 -- raised by a parent package's own code
        report_uncaught(exc)
        raise SystemExit(1) from None
    return Program(
        code=code,
        label=f"-m {module}",
        argv=[spec.origin, *args],
        path0=os.getcwd(),
        module_attrs=_module_attrs(spec),
    )


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


def _compile_script(script: str, args: list[str], path: str) -> Program:
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
            print_syntax_error(exc)
            raise SystemExit(1) from None
        loader = SourceFileLoader("__main__", path)
    return Program(
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


def _main_module_of_path(script: str, args: list[str], path: str) -> Program:
    import runpy

    try:
        _, spec, code = runpy._get_main_module_details(runpy._Error)  # type: ignore
    except runpy._Error as exc:  # type: ignore[attr-defined]
        raise ProgramError(str(exc), 1) from None
    except SyntaxError as exc:
        print_syntax_error(exc)
        raise SystemExit(1) from None
    return Program(
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

