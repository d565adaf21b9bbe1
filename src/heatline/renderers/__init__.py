"""Renderers: every view of a profile, made from the profile dict alone (docs/profile-format.md).

The interface: each format is one module of this package with ``render(profile, view) -> bytes``
(``view``: what the reader asked to see, :class:`View`); the terminal module also prints to a
live stream (``print_report``), the only place colour and the terminal's width matter. One
writer: :func:`render_to` writes any format's bytes atomically (data/io.py), whether at the end
of a run (``-o``), by ``heatline view`` or by ``Profile.save``.

Beside the formats, the views of a live process: dump_text.py (``heatline dump``'s text and
JSON, from a dump) and top_text.py (``heatline top``'s text and tables, from a window of
readings); they are not formats of a profile.
"""

from __future__ import annotations

import os

from heatline.options import FORMATS

# typing only for type checkers: a run's path imports none (heatline/__init__.py).
TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: importing typing costs every run about 4 ms
    from typing import Any

    from heatline.data.model import Profile
    from heatline.renderers.view import View

# Format -> the module of this package that renders it.
MODULES = {"terminal": "terminal", "json": "profile_json", "html": "html",
           "collapsed": "collapsed", "speedscope": "speedscope", "pprof": "pprof",
           "chrome": "chrome", "otlp": "otlp"}
assert set(MODULES) == set(FORMATS)

# Output suffix -> format, longest suffix first (".speedscope.json" before ".json").
SUFFIXES = (
    (".speedscope.json", "speedscope"),
    (".trace.json", "chrome"),
    (".perfetto.json", "chrome"),
    (".otlp.pb", "otlp"),
    (".pb.gz", "pprof"),
    (".pprof", "pprof"),
    (".collapsed", "collapsed"),
    (".folded", "collapsed"),
    (".html", "html"),
    (".htm", "html"),
    (".json", "json"),
    (".txt", "terminal"),
)


def __getattr__(name: str) -> Any:
    # View lives in view.py, imported on first use: the live views' modules of this package
    # (dump_text.py) need none, and `heatline dump`, whose whole run is its start-up, then does
    # not import collections for its namedtuple (about 1 ms).
    if name == "View":
        from heatline.renderers.view import View

        return View
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def format_for_path(path: str) -> str:
    """The format an output file's name asks for; JSON when the suffix is not one of ours."""
    name = os.path.basename(path).lower()
    for suffix, fmt in SUFFIXES:
        if name.endswith(suffix):
            return fmt
    return "json"


def render_bytes(profile: Profile, fmt: str, view: View | None = None) -> bytes:
    """``profile`` in format ``fmt`` (view None: the default View)."""
    if view is None:
        from heatline.renderers.view import View

        view = View()
    if fmt not in MODULES:
        raise ValueError(f"unknown format {fmt!r} (one of {', '.join(FORMATS)})")
    module = __import__(f"heatline.renderers.{MODULES[fmt]}", fromlist=["render"])
    return module.render(profile, view)


def render_to(profile: Profile, fmt: str | None, path: str, view: View | None = None) -> None:
    """Write ``profile`` to ``path`` in ``fmt`` (None: from the suffix), atomically (a reader
    never sees half a file; data.io.write_bytes). Raises OSError if it cannot be written."""
    from heatline.data.io import write_bytes

    write_bytes(render_bytes(profile, fmt or format_for_path(path), view), path)
