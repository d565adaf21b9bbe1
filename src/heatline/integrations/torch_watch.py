"""Run a callback once a module has been imported, without importing it: heatline's PyTorch
hooks are installed when, and only when, the profiled program imports torch itself.

``when_imported(name, callback)``: ``callback(module)`` runs at once when ``name`` is already
imported, else right after the program's own import of it has finished executing the module
(on the importing thread, under the import's lock), once. Nothing here imports the watched
module: a program that never imports torch never has it imported by heatline.

How: a finder first on ``sys.meta_path`` that answers no import itself. Asked for a watched
name, it asks the finders after it for the module's spec, and gives the loader of that spec
an ``exec_module`` of its own (an attribute of that one loader object, which a package's
loader is: one per module) that runs the loader's and then the callbacks, and is then removed.
An exception raised by a callback is swallowed: the program's import must succeed as it would
without heatline. The finder takes itself off ``sys.meta_path`` once no watch is pending.

Dependency-free (only sys and _thread), so any layer may import it
(tests/unit/test_python_layout.py)."""

from __future__ import annotations

import sys
from _thread import allocate_lock  # threading's Lock, without importing threading

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable

_lock = allocate_lock()
_pending: dict[str, list[Callable[[Any], None]]] = {}


def when_imported(module_name: str, callback: Callable[[Any], None]) -> None:
    """Call ``callback(module)`` once ``module_name`` is imported: now if it is already."""
    module = sys.modules.get(module_name)
    if module is not None:
        _call(callback, module)
        return
    with _lock:
        _pending.setdefault(module_name, []).append(callback)
        if _FINDER not in sys.meta_path:
            sys.meta_path.insert(0, _FINDER)


def _call(callback: Callable[[Any], None], module: Any) -> None:
    try:
        callback(module)
    except Exception:  # noqa: BLE001 -- the program's import must not fail because of heatline
        pass


class _Finder:
    """The meta path entry: finds nothing itself, wraps the loader of a watched module."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name not in _pending:
            return None
        spec = None
        for finder in list(sys.meta_path):
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        loader = getattr(spec, "loader", None)
        original = getattr(loader, "exec_module", None)
        if original is None:
            return spec

        def exec_module(module: Any) -> None:
            try:
                original(module)
            finally:
                try:
                    del loader.exec_module
                except AttributeError:
                    pass
            _fire(name)

        try:
            loader.exec_module = exec_module
        except (AttributeError, TypeError):
            pass  # a loader without an instance dict: checked again at the next import
        return spec

    def invalidate_caches(self) -> None:
        pass


def _fire(name: str) -> None:
    module = sys.modules.get(name)
    if module is None:
        return  # its execution failed: the watch stays for a later import
    with _lock:
        callbacks = _pending.pop(name, [])
        if not _pending and _FINDER in sys.meta_path:
            sys.meta_path.remove(_FINDER)
    for callback in callbacks:
        _call(callback, module)


_FINDER = _Finder()
