"""when_imported(): a callback run once a module has been imported, without importing it.

heatline hooks into torch (engine/torch_labels.py) only when the profiled program imports
torch itself: a program without torch must not pay torch's import, nor see it in sys.modules.
A finder at the front of sys.meta_path notices the import of a watched name, lets the other
finders find it, and runs the callbacks once the module's code has run (its loader's
exec_module returned); the module's spec and loader are left as they were found. A module
already imported gets its callback at once.

This module imports nothing of heatline's (its layer is the bottom one: the session, below
the integrations, installs the watch).
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

_waiting: dict[str, list[Callable[[Any], None]]] = {}


def when_imported(module_name: str, callback: Callable[[Any], None]) -> None:
    """Call ``callback(module)`` once ``module_name`` is imported: now if it already is, else
    right after the program's import of it finishes. A callback that raises is ignored (the
    program must not notice)."""
    module = sys.modules.get(module_name)
    if module is not None:
        _call(callback, module)
        return
    _waiting.setdefault(module_name, []).append(callback)
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)


def forget(module_name: str, callback: Callable[[Any], None]) -> None:
    """No longer call ``callback`` for ``module_name`` (if it is still waiting)."""
    callbacks = _waiting.get(module_name, [])
    if callback in callbacks:
        callbacks.remove(callback)
    if not callbacks:
        _waiting.pop(module_name, None)
    if not _waiting and _FINDER in sys.meta_path:
        sys.meta_path.remove(_FINDER)


def _call(callback: Callable[[Any], None], module: Any) -> None:
    try:
        callback(module)
    except Exception:  # noqa: BLE001, S110 -- a watcher's failure is heatline's, never the program's
        pass


class _Loader:
    """The module's own loader, whose exec_module then runs the callbacks."""

    def __init__(self, loader: Any, name: str) -> None:
        self._loader = loader
        self._name = name

    def create_module(self, spec: Any) -> Any:
        create = getattr(self._loader, "create_module", None)
        return None if create is None else create(spec)

    def exec_module(self, module: Any) -> None:
        spec = getattr(module, "__spec__", None)
        if spec is not None and spec.loader is self:
            spec.loader = self._loader
        if getattr(module, "__loader__", None) is self:
            module.__loader__ = self._loader
        self._loader.exec_module(module)
        for callback in _waiting.pop(self._name, []):
            _call(callback, sys.modules.get(self._name, module))
        if not _waiting and _FINDER in sys.meta_path:
            sys.meta_path.remove(_FINDER)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)


class _Finder:
    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name not in _waiting:
            return None
        for finder in sys.meta_path:
            if finder is self:
                continue
            find = getattr(finder, "find_spec", None)
            if find is None:
                continue
            spec = find(name, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.loader is not None and hasattr(spec.loader, "exec_module"):
            spec.loader = _Loader(spec.loader, name)
        return spec


_FINDER = _Finder()
