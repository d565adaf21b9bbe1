"""heatline: a line-level profiler for Python whose sampling engine is written in C.

Run a program under it with ``heatline script.py`` (see ``heatline --help``), or profile
from inside a program (heatline/api.py)::

    heatline.start(cpu_only=False)          # options as on the command line
    ...
    p = heatline.stop()                     # a heatline.Profile: p.print(), p.save("x.html")

    with heatline.profile() as p: ...       # the same around a block

    @heatline.profile                       # each call of a function
    def work(): ...

A profiled program may call :func:`pause` and :func:`resume` to profile only part of its run,
and :func:`step` at each iteration of its loop (a training step) to have each one timed.

Importing this package is cheap on purpose: the API (heatline.api), the engine
(``heatline._native``) and rich are only imported when they are used.

PYTEST_DONT_REWRITE: heatline's pytest plugin (an entry point of this distribution) makes
pytest mark this package for assertion rewriting, and under ``heatline -m pytest`` the package
is imported before pytest starts, which pytest would report with a warning ("Module already
imported so cannot be rewritten"), an error under ``filterwarnings = error``. This marker is
pytest's way of saying the package's asserts are not to be rewritten: a profiled program must
see no warning heatline caused.
"""

from __future__ import annotations

import sys

from heatline._version import __version__

# typing (and collections.abc) is imported only for type checkers, the annotations being
# strings, here and in every module on a run's path: what the main process imports to run the
# program and finish a -q run (tests/unit/test_cli.py), and what a followed child imports
# before its program runs (run/follow.py; run/handover.py for an exec of the main process;
# tests/unit/test_start_path.py). typing and what it imports (re, functools, collections,
# enum...) would double a child interpreter's start: `python -X importtime -c "import typing"`
# gives it about 10 ms, where `python -c pass` takes about 12 ms in all (CPython 3.11, x86-64
# Linux). In the main process it would hold about 2 MB (/proc/self/statm's resident pages
# before and after `import typing`), which every fork child (a Pool's workers) maps again.
TYPE_CHECKING = False
if TYPE_CHECKING:  # what type checkers and IDEs see; at run time __getattr__ imports them
    from typing import Any

    from heatline.api import HeatlineError, Profile, is_running, profile, start, stop
    from heatline.integrations import dask as dask
    from heatline.integrations import ray as ray
__all__ = [
    "__version__", "pause", "resume", "step", "start", "stop", "profile", "Profile",
    "HeatlineError", "is_running", "region",
]

# Imported from heatline.api on first use (PEP 562).
_API = frozenset({"start", "stop", "profile", "Profile", "HeatlineError", "is_running"})


def __getattr__(name: str) -> Any:
    if name == "dask":  # heatline.dask.profile_workers (imports distributed when a block starts)
        from heatline.integrations import dask

        return dask
    if name == "ray":  # heatline.ray: profile_workers, runtime_env (imports Ray when used)
        from heatline.integrations import ray

        return ray
    if name == "region":
        from heatline.engine.labels import region

        return region
    if name in _API:
        from heatline import api

        return getattr(api, name)
    raise AttributeError(f"module 'heatline' has no attribute {name!r}")


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext heatline``: the %heatline and %%heatline magics
    (heatline/integrations/ipython.py)."""
    from heatline.integrations.ipython import load

    load(ipython)


def pause() -> None:
    """Stop charging time until :func:`resume`. Does nothing when no profile is being taken."""
    call = _session_call("pause")
    if call is not None:
        call()


def resume() -> None:
    """Charge time again after :func:`pause` (or after starting with ``--off``)."""
    call = _session_call("resume")
    if call is not None:
        call()


def step() -> None:
    """Mark the boundary between two steps of the program's loop (a training step): step N
    runs from the Nth call to the (N+1)th. Each step's duration is in the profile (``steps``)
    and the report, and ``--steps A:B`` profiles only steps A to B. Without any call, each
    PyTorch ``Optimizer.step()`` marks one; once the program calls this, only its calls do.
    Costs a clock read; does nothing when no profile is being taken. Steps are marked from one
    thread (the first that marks one): calls from other threads are ignored, and the profile's
    warnings say how many there were."""
    call = _session_call("step")
    if call is not None:
        call()


def _session_call(name: str) -> Any:
    """The running session's function ``name``, or None when no profile can be running. A
    running profile always lives in heatline.engine.session, so if that module was never
    imported nothing is running, and the engine is not imported into an unprofiled program.
    A module still being imported (by heatline attach's thread, while the program's thread
    gets here) has no session running yet either, and may not have the function yet."""
    return getattr(sys.modules.get("heatline.engine.session"), name, None)
