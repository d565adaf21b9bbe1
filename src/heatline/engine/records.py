"""Plain record classes for the readers of a live process (engine/dump.py): :func:`dataclass`
and :func:`field` declare them as dataclasses' namesakes do (annotated fields, defaults,
``default_factory``, ``frozen``), giving the constructor, ``==``, ``repr`` and, when frozen,
``hash``; not ``dataclasses.fields``, ``asdict`` or ``replace``.

Why not dataclasses: ``heatline dump`` is a command whose whole run is its start-up, and
importing dataclasses imports inspect, re, ast, dis, tokenize and more, several times the cost
of reading the process (docs/design-live.md, "heatline dump", where its time goes). This module
imports nothing but sys (loaded at start).
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable

_MISSING = object()


class FrozenInstanceError(AttributeError):
    """Setting or deleting a field of a frozen record."""


class _Field:
    __slots__ = ("default", "default_factory")

    def __init__(self, default: Any, default_factory: Callable[[], Any] | None) -> None:
        self.default = default
        self.default_factory = default_factory


def field(*, default: Any = _MISSING, default_factory: Callable[[], Any] | None = None) -> Any:
    """A field's default given as a factory (a new list per record) or explicitly."""
    return _Field(default, default_factory)


def dataclass(cls: type | None = None, *, frozen: bool = False) -> Any:
    """``@dataclass`` or ``@dataclass(frozen=True)`` on a class of annotated fields."""
    if cls is None:
        return lambda c: _make(c, frozen)
    return _make(cls, frozen)


def _own_annotations(klass: type) -> Any:
    """The fields ``klass`` itself annotates, in order. A module with ``from __future__ import
    annotations`` (or before 3.14) keeps them in the class's dict; from 3.14 a class without it
    makes them on first access (PEP 649), own ones only, as from 3.10 on."""
    own = klass.__dict__.get("__annotations__")
    if own is None and sys.version_info >= (3, 10):
        try:
            own = klass.__annotations__
        except NameError:  # an annotation naming what does not exist (yet): no field known
            own = None
    return own or {}


def _make(cls: type, frozen: bool) -> type:
    names: list[str] = []
    defaults: dict[str, Any] = {}  # name -> value, or _Field for a factory
    for klass in reversed(cls.__mro__[:-1]):  # a base record's fields first, as dataclasses
        for name in _own_annotations(klass):
            if name not in names:
                names.append(name)
            value = klass.__dict__.get(name, _MISSING)
            if isinstance(value, _Field):
                if value.default is not _MISSING:
                    defaults[name] = value.default
                elif value.default_factory is not None:
                    defaults[name] = value
            elif value is not _MISSING:
                defaults[name] = value
    for name, value in list(cls.__dict__.items()):
        if isinstance(value, _Field):  # as dataclasses: a plain default stays a class attribute
            if name in defaults and not isinstance(defaults[name], _Field):
                setattr(cls, name, defaults[name])
            else:
                delattr(cls, name)
    fields = tuple(names)
    set_field = object.__setattr__

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        if len(args) > len(fields):
            raise TypeError(f"{cls.__name__}() takes {len(fields)} arguments, {len(args)} given")
        for name, value in zip(fields, args):
            set_field(self, name, value)
        for name in fields[len(args):]:
            if name in kwargs:
                set_field(self, name, kwargs.pop(name))
            elif name in defaults:
                default = defaults[name]
                set_field(self, name, default.default_factory() if isinstance(default, _Field)
                          else default)
            else:
                raise TypeError(f"{cls.__name__}() missing argument {name!r}")
        if kwargs:
            raise TypeError(f"{cls.__name__}() got an unexpected argument {next(iter(kwargs))!r}")

    def values(self: Any) -> tuple:
        return tuple(getattr(self, name) for name in fields)

    def __eq__(self: Any, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return values(self) == values(other)

    def __repr__(self: Any) -> str:
        inside = ", ".join(f"{name}={getattr(self, name)!r}" for name in fields)
        return f"{cls.__qualname__}({inside})"

    cls.__init__ = __init__
    cls.__eq__ = __eq__
    cls.__repr__ = __repr__
    cls.__match_args__ = fields
    if frozen:
        def __setattr__(self: Any, name: str, value: Any) -> None:
            raise FrozenInstanceError(f"cannot assign to field {name!r}")

        def __delattr__(self: Any, name: str) -> None:
            raise FrozenInstanceError(f"cannot delete field {name!r}")

        def __hash__(self: Any) -> int:
            return hash(values(self))

        cls.__setattr__ = __setattr__
        cls.__delattr__ = __delattr__
        cls.__hash__ = __hash__
    else:
        cls.__hash__ = None  # mutable and compared by value: unhashable, as a dataclass
    return cls
