"""heatline: a line-level profiler for Python whose sampling engine is written in C.

Run a program under it with ``heatline script.py`` (see ``heatline --help``). A profiled
program may call :func:`pause` and :func:`resume` to profile only part of its run.

Importing this package is cheap on purpose: the engine (``heatline._native``) and rich are only
imported when a profile is actually taken or shown.
"""

from __future__ import annotations

import sys

__version__ = "0.1.0"
__all__ = ["__version__", "pause", "resume"]


def pause() -> None:
    """Stop charging time until :func:`resume`. Does nothing when no profile is being taken."""
    # A running profile always lives in heatline.session, so if that module was never imported
    # nothing is running, and we avoid importing the engine into an unprofiled program.
    session = sys.modules.get("heatline.session")
    if session is not None:
        session.pause()


def resume() -> None:
    """Charge time again after :func:`pause` (or after starting with ``--off``)."""
    session = sys.modules.get("heatline.session")
    if session is not None:
        session.resume()
