"""Regions and modules, the shell's side of the engine's labels (_native/labels.h).

A label is a (kind, name...) tuple the engine knows by a small id handed out here; entering
one pushes it on the calling thread's stack in the engine (a C call) and returns a token that
closes that very entry. The engine keeps the tree of paths, each path's count and wall time,
and charges every sample to the innermost label open on the sampled thread.

:class:`region` is heatline.region (a context manager and a decorator). The torch side
(record_function, NVTX ranges, module forwards) is torch_labels.py, installed by the session
when the program imports torch.
"""

from __future__ import annotations

from _thread import allocate_lock, get_ident  # threading's, without importing threading

from heatline import _native

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

REGION = "region"
MODULE = "module"
# or'ed into a region's id: the engine keeps its spans (a Chrome trace's slices), not a module's
SLICED = 1 << 31

# id -> the label's tuple; and back. Ids live as long as the process (the engine's nodes name
# them), so a label entered in one session and closed in the next is still known.
_names: list[tuple[str, ...]] = []
_ids: dict[tuple[str, ...], int] = {}
_lock = allocate_lock()

push = _native.label_push
pop = _native.label_pop
_get_ident = get_ident


def name_id(label: tuple[str, ...]) -> int:
    """The engine's id of ``label`` (a tuple whose first item is its kind)."""
    found = _ids.get(label)
    if found is None:
        with _lock:
            found = _ids.get(label)
            if found is None:
                found = len(_names)
                _names.append(label)
                _ids[label] = found
    return found


def region_id(name: str) -> int:
    """What to push for a region named ``name``."""
    return name_id((REGION, name)) | SLICED


class region:  # noqa: N801 -- used as heatline.region, like a function
    """``with heatline.region("name"):`` or ``@heatline.region("name")``: marks a phase of the
    program; regions nest (the path "step/forward"). Each entry is closed where its exit runs,
    on the thread that entered it (an exception included)."""

    __slots__ = ("name", "_id", "_open")

    def __init__(self, name: str) -> None:
        if not isinstance(name, str):
            raise TypeError(f"heatline.region's name must be a str, not {type(name).__name__}")
        self.name = name
        self._id = region_id(self.name)
        self._open: list[tuple[int, int]] = []  # (thread, token) of the entries open

    def __enter__(self) -> region:
        self._open.append((_get_ident(), push(self._id)))
        return self

    def __exit__(self, *exc_info: Any) -> None:
        ident = _get_ident()
        opened = self._open
        if opened and opened[-1][0] == ident:  # the usual case
            pop(opened.pop()[1])
            return
        for index in range(len(opened) - 2, -1, -1):
            if opened[index][0] == ident:
                pop(opened.pop(index)[1])
                break

    def __call__(self, function: Callable[..., Any]) -> Callable[..., Any]:
        import functools

        label = self._id

        @functools.wraps(function)
        def in_region(*args: Any, **kwargs: Any) -> Any:
            token = push(label)
            try:
                return function(*args, **kwargs)
            finally:
                pop(token)

        return in_region

    def __repr__(self) -> str:
        return f"heatline.region({self.name!r})"


def raw() -> dict[str, Any]:
    """The engine's labels (docs/engine-api.md, labels()) with the names their ids stand for,
    as a snapshot carries them (``snapshot["labels"]``)."""
    result = _native.labels()
    result["names"] = [list(name) for name in _names]
    return result
