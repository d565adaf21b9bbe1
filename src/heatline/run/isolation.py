"""Module isolation: the program imports its own modules (a local json.py, re.py, typing.py)
exactly as under python, while heatline's work at exit imports heatline's
(docs/design-running.md, "Running the program", Modules). Imported before the program's
directory is put on sys.path."""

from __future__ import annotations

import sys

# typing only for type checkers: a run's path imports none (heatline/__init__.py).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


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
STARTUP_MODULES = _startup_modules()


# Where heatline's own late imports (json, rich, ...) are found: sys.path without the entry's
# directory (the current one for -m, the script's bin directory), which is the program's
# directory once it runs.
OWN_PATH = list(sys.path if getattr(sys.flags, "safe_path", False) or sys.flags.isolated
                 else sys.path[1:])


def set_aside_own_modules(keep: tuple[str, ...] = ()) -> dict[str, Any]:
    """Take the modules only heatline imported out of sys.modules, so the program imports its
    own (a local re.py, typing.py, signal.py...) exactly as under python; heatline keeps its
    references to them. Returns sys.modules as it was, for heatline's work at exit.

    Kept: heatline's own package (the program may call heatline.pause()), modules built
    into the interpreter, which no file can shadow, and those named in ``keep``.

    The program's ``__main__`` is left out of what is returned: heatline must hold no
    reference to it, or it would outlive the interpreter's removal of sys.modules at shutdown
    and be cleared like a module still alive then (its globals set to None while finalizers
    of its objects still run: a ``__del__`` calling ``os.remove`` fails), where python frees
    it with its objects, globals intact, in the collection that follows (Python/pylifecycle.c,
    finalize_modules).
    """
    own = dict(sys.modules)
    for name in own:
        if name in STARTUP_MODULES or name in sys.builtin_module_names or name in keep:
            continue
        if is_heatline(name) or name == "__main__":
            continue
        del sys.modules[name]
    own.pop("__main__", None)
    return own


def is_heatline(name: str) -> bool:
    return name == "heatline" or name.startswith("heatline.")


class own_imports:  # noqa: N801 -- used as a function: with own_imports(...)
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
            # The program's __main__ meanwhile (held only for as long as heatline's work).
            if "__main__" in program_modules:
                sys.modules["__main__"] = program_modules["__main__"]
            # heatline's own modules stay one copy, whoever imported them first.
            sys.modules.update(
                (name, module) for name, module in program_modules.items() if is_heatline(name)
            )
            sys.path[:] = OWN_PATH
        except BaseException:
            self.__exit__()
            raise

    def __exit__(self, *exc_info: Any) -> None:
        sys.path[:] = self.program_path
        sys.modules.clear()
        sys.modules.update(self.program_modules)
        del self.program_modules  # nothing of the program's kept past heatline's work

