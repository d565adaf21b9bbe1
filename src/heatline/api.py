"""Profiling from inside a program: ``heatline.start()`` / ``heatline.stop()``, ``with
heatline.profile() as p:``, ``@heatline.profile`` and the :class:`Profile` they give.

One engine per process: one profile at a time, whoever started it (this API, or the
``heatline`` command, which profiles the whole program and owns its session). The guarantees
are in docs/engine-api.md ("Profiling from inside: heatline.start/stop").

Imported by ``heatline.start`` and the like, never by ``import heatline``; the engine itself
is imported only when a profile starts (heatline.engine.session).
"""

from __future__ import annotations

import functools
import os
import sys
import threading
from typing import Any, Callable, NamedTuple, TypeVar, overload

from heatline.options import (
    DEFAULT_THRESHOLD_PCT, RENAMED_FLAGS, RUN_OPTIONS, Options, only_implies_all,
)


class HeatlineError(RuntimeError):
    """A misuse of the profiling API (starting twice, stopping when not started, a bad
    option); str() is one sentence that says what to do."""


# --- options ------------------------------------------------------------------------------

# Each option's keyword names: every long flag spelled as a Python name
# (sampling_interval for --sampling-interval, memory_sampling_window...).
_KEYWORDS = {
    flag[2:].replace("-", "_"): option
    for option in RUN_OPTIONS
    for flag in option.flags
    if flag.startswith("--")
}


def options_from_keywords(keywords: dict[str, Any]) -> Options:
    """The run options named by keyword, as on the command line (``cpu_only=True``,
    ``memory_sampling_window="16K"``, ``profile_only="mypkg,other"``); each value is checked by
    the option's own parser. Raises HeatlineError naming the option."""
    values: dict[str, Any] = {}
    for name, value in keywords.items():
        option = _KEYWORDS.get(name)
        renamed = RENAMED_FLAGS.get("--" + name.replace("_", "-"))
        if option is None and renamed is not None:
            new = renamed.split()[0][2:].replace("-", "_")
            raise HeatlineError(f"option {name!r} is now {new!r}{renamed[len(new) + 2:]}")
        if option is None:
            known = ", ".join(sorted(_KEYWORDS))
            raise HeatlineError(f"unknown option {name!r}; the options are: {known}")
        if option.dest in values:
            raise HeatlineError(f"option {name!r} is given twice (also by another name)")
        try:
            values[option.dest] = _value(option, value)
        except (TypeError, ValueError) as exc:  # argparse.ArgumentTypeError is a ValueError
            raise HeatlineError(f"option {name}: {exc}") from None
    only_implies_all(values)
    if values.get("outfile") is not None:
        values["outfile"] = os.path.abspath(os.fspath(values["outfile"]))
    return Options(**values)


def _value(option: Any, value: Any) -> Any:
    if not option.takes_value:
        if option.negatable and value is None:
            return None
        if not isinstance(value, bool):
            raise TypeError(f"must be True or False, not {value!r}")
        return value
    if option.dest == "outfile":
        return None if value is None else os.fspath(value)
    if option.dest == "format" and value is None:
        return None
    if isinstance(option.default, list) and isinstance(value, (list, tuple)):
        return [str(part) for part in value]
    if option.parse is None:
        return value
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise TypeError(f"must be a string or a number, not {value!r}")
    try:
        return option.parse(str(value))
    except Exception as exc:  # noqa: BLE001 -- argparse.ArgumentTypeError, without argparse
        raise ValueError(str(exc)) from None


# --- one profile at a time ---------------------------------------------------------------------


class Run(NamedTuple):
    """The profile :func:`start` began (:func:`current_run`)."""

    session: Any  # heatline.engine.session.Session
    options: Options
    server: Any = None  # heatline.serve.PprofServer (pprof_server=...)


_lock = threading.Lock()
_run: Run | None = None


def _forget_in_child() -> None:
    """After fork(): the child's engine is stopped (docs/engine-api.md) and the parent's
    profile is the parent's; the child may start its own."""
    global _run, _lock
    _lock = threading.Lock()  # another thread may have held it across the fork
    if _run is not None:
        session = sys.modules.get("heatline.engine.session")
        if session is not None:
            session.forget_active(_run.session)
        if _run.server is not None:
            _run.server.forget()  # its threads are the parent's; the socket stays the parent's
        _run = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)


def _cli_session() -> Any:
    """The session of a `heatline script.py` run this program is part of, if any."""
    session = sys.modules.get("heatline.engine.session")
    active = None if session is None else session.active()
    if active is None or (_run is not None and active is _run.session):
        return None
    return active


def start(**options: Any) -> None:
    """Start profiling the whole process (every thread, native memory included) until
    :func:`stop`. ``options`` are the command line's, named as keywords (see
    :func:`options_from_keywords`). Raises HeatlineError if a profile is already being taken
    in this process, including the one of ``heatline script.py``."""
    start_with_options(options_from_keywords(options))


def start_with_options(options: Options, program: str | None = None,
                       announce: bool = True) -> None:
    """:func:`start` with its options parsed already (the pytest plugin, the IPython magics,
    heatline attach's side in the target: run/attached.py). ``program`` names what is profiled
    in the profile's header (default: the ``__main__`` script's path). ``announce`` False: the
    address of a --pprof-server on a port the kernel picked is not written to stderr (heatline
    attach: the attacher says it, the program's stderr stays its own)."""
    global _run
    with _lock:
        if _run is not None:
            raise HeatlineError(
                "heatline is already profiling this process (heatline.start() was called "
                "before); call heatline.stop() first"
            )
        if _cli_session() is not None:
            raise HeatlineError(
                "this program runs under the heatline command, which already profiles all of "
                "it: use heatline.pause()/resume() (or --off), or the @profile decorator to "
                "limit the report"
            )
        from heatline.engine.session import Session

        if program is None:
            main_file = getattr(sys.modules.get("__main__"), "__file__", None)
            program = os.path.abspath(main_file) if isinstance(main_file, str) else "<python>"
        session = Session(
            program=program,
            argv=[str(arg) for arg in sys.argv],
            main_native_id=threading.main_thread().native_id or 0,
            **options.session_arguments(),
        )
        server = None
        if options.pprof_server is not None:
            from heatline.serve import PprofServer, ServerError

            try:
                server = PprofServer(*options.pprof_server, session.profile)
            except ServerError as exc:
                raise HeatlineError(str(exc)) from None
        try:
            session.start()
        except (RuntimeError, OSError) as exc:
            if server is not None:
                server.close()
            raise HeatlineError(f"could not start the profiler: {exc}") from None
        if server is not None:
            server.start()
            if announce and options.pprof_server[1] == 0:  # a port picked by the kernel
                sys.stderr.write(f"heatline: pprof server on {server.url}\n")
        _run = Run(session, options, server)


def stop() -> Profile:
    """Stop the profile :func:`start` began and return it (written to ``outfile`` too when
    that option was given). May be called from any thread. Raises HeatlineError when no
    profile was started in this process."""
    global _run
    with _lock:
        run = _run
        if run is None:
            raise HeatlineError("heatline is not profiling: call heatline.start() first")
        _run = None
    if run.server is not None:
        run.server.close()
    from heatline.engine.session import collector_paused

    with collector_paused():
        run.session.stop()
        data = run.session.profile()
        options = run.options
        if options.use_virtual_time:
            from heatline.data.virtual_time import running_time_only

            running_time_only(data)
        result = Profile(data, reduced=options.reduced_profile,
                         threshold_pct=options.threshold_pct)
        if options.outfile:
            result.save(options.outfile, format=options.format)
    return result


def is_running() -> bool:
    """Whether a profile started by :func:`start` is being taken in this process."""
    return _run is not None


def current_run() -> Run | None:
    """The profile :func:`start` began (its engine session, options and pprof server), or
    None when none is being taken."""
    return _run


# --- with heatline.profile() / @heatline.profile ---------------------------------------------


_F = TypeVar("_F", bound=Callable[..., Any])


@overload
def profile(function: _F, /) -> _F: ...


@overload
def profile(function: None = None, /, **options: Any) -> Profiler: ...


def profile(function: Callable[..., Any] | None = None, /, **options: Any) -> Any:
    """``with heatline.profile(**options) as p:`` profiles the block (``p`` is the
    :class:`Profile`, complete once the block is left); ``@heatline.profile`` or
    ``@heatline.profile(**options)`` profiles each call of a function and prints its report
    on stderr (``quiet=True``: not; the last one is ``function.heatline_profile``).

    Under the ``heatline`` command the decorator marks the function instead, as the builtin
    ``profile`` does there: the report is limited to the decorated functions."""
    profiler = Profiler(options_from_keywords(options))
    return profiler if function is None else profiler(function)


# CO_GENERATOR, CO_COROUTINE, CO_ITERABLE_COROUTINE, CO_ASYNC_GENERATOR (inspect's flags,
# without importing inspect).
_RETURNS_EARLY = 0x20 | 0x80 | 0x100 | 0x200


class Profiler:
    """What :func:`profile` returns: a context manager, and a decorator."""

    def __init__(self, options: Options) -> None:
        self.options = options
        self._profiles: list[Profile] = []

    def __enter__(self) -> Profile:
        start_with_options(self.options)
        result = Profile(None)
        self._profiles.append(result)
        return result

    def __exit__(self, *exc_info: Any) -> None:
        result = self._profiles.pop()
        result._data = stop()._data

    def __call__(self, function: _F) -> _F:
        if _cli_session() is not None:
            from heatline.engine import marked

            return marked.profile(function)
        if not callable(function):
            raise HeatlineError(f"@heatline.profile decorates a function, not {function!r}")
        code = getattr(function, "__code__", None)
        if code is not None and code.co_flags & _RETURNS_EARLY:
            raise HeatlineError(
                f"@heatline.profile cannot profile {function.__qualname__}: its calls return "
                "before its work runs (a coroutine or generator); use `with heatline.profile()` "
                "around the code that runs it"
            )
        options = self.options

        @functools.wraps(function)
        def profiled(*args: Any, **kwargs: Any) -> Any:
            try:
                start_with_options(options)
            except HeatlineError:
                if _run is None and _cli_session() is None:
                    raise  # the engine could not start: say so
                return function(*args, **kwargs)  # inside a profile already: part of it
            try:
                return function(*args, **kwargs)
            finally:
                result = stop()
                profiled.heatline_profile = result  # type: ignore[attr-defined]
                if not options.quiet:
                    result.print(file=sys.stderr)

        profiled.heatline_profile = None  # type: ignore[attr-defined]
        return profiled  # type: ignore[return-value]


# --- the result ---------------------------------------------------------------------------------


# The numbers of a line or function (docs/profile-format.md): seconds, then bytes.
_STAT_FIELDS = [(key, float if key.endswith("_s") else int) for key in (
    "python_s", "native_s", "system_s", "alloc_python_bytes", "alloc_native_bytes",
    "peak_bytes", "growth_bytes", "copy_bytes", "cpu_wait_s")]
_STAT_KEYS = tuple(key for key, _ in _STAT_FIELDS)


class _Totals:
    """The sums every stats tuple has."""

    @property
    def time_s(self) -> float:
        return (self.python_s + self.native_s + self.system_s  # type: ignore[attr-defined]
                + self.cpu_wait_s)  # type: ignore[attr-defined]

    @property
    def alloc_bytes(self) -> int:
        return self.alloc_python_bytes + self.alloc_native_bytes  # type: ignore[attr-defined]


class LineStats(  # type: ignore[misc]
    _Totals,
    NamedTuple("LineStats", [("file", str), ("line", int), ("function", str),
                             ("source", str), *_STAT_FIELDS]),
):
    """One line that took time or memory: ``file``, ``line``, ``function`` (qualname),
    ``source``, then the profile's numbers (python_s... copy_bytes, then cpu_wait_s: waiting for
    a CPU), ``time_s`` (python + native + system + cpu_wait), ``alloc_bytes``."""

    __slots__ = ()

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"


class FunctionStats(  # type: ignore[misc]
    _Totals,
    NamedTuple("FunctionStats", [("file", str), ("qualname", str), ("first_line", int),
                                 *_STAT_FIELDS]),
):
    """One function's own lines summed (time in your other functions it calls is theirs)."""

    __slots__ = ()


class Leak(NamedTuple):
    """A line whose held memory grew steadily until the end (leak rule: docs/design-memory.md)."""

    file: str
    line: int
    function: str
    likelihood: float
    growth_bytes: int
    growth_bytes_per_s: float


_LABEL_TIMES = (("python_s", float), ("native_s", float), ("system_s", float),
                ("cpu_wait_s", float))
# A region's or module's memory: 0 where memory was not profiled (or an older file).
_LABEL_MEMORY = (("alloc_bytes", int), ("peak_bytes", int))


class RegionStats(NamedTuple("RegionStats", [("path", str), ("name", str), ("count", int),
                                             ("wall_s", float), *_LABEL_TIMES,
                                             *_LABEL_MEMORY])):
    """A region (heatline.region, record_function, an NVTX range) by its path ("step/forward"):
    entries, wall time, the sampled split of its time and the memory allocated inside (and the
    program's peak reached by it), nested regions included."""

    __slots__ = ()

    @property
    def sampled_s(self) -> float:
        return self.python_s + self.native_s + self.system_s + self.cpu_wait_s


class ModuleStats(NamedTuple("ModuleStats", [("path", str), ("class_name", str), ("root", str),
                                             ("count", int), ("wall_s", float), ("self_s", float),
                                             *_LABEL_TIMES, *_LABEL_MEMORY])):
    """A torch module instance by its path in its root module: forward calls, wall time (its
    submodules included), self time (without them), the sampled split and memory."""

    __slots__ = ()

    @property
    def sampled_s(self) -> float:
        return self.python_s + self.native_s + self.system_s + self.cpu_wait_s


class Profile:
    """A finished profile: ``data`` is the profile dict (docs/profile-format.md, the same as
    ``heatline -o prof.json`` writes); the methods render it and give its numbers."""

    def __init__(self, data: dict[str, Any] | None, *, reduced: bool = False,
                 threshold_pct: float = DEFAULT_THRESHOLD_PCT) -> None:
        self._data = data
        self.reduced = reduced
        self.threshold_pct = threshold_pct

    @property
    def data(self) -> dict[str, Any]:
        if self._data is None:
            raise HeatlineError("the profile is complete once its `with` block is left")
        return self._data

    def print(self, file: Any = None, *, reduced: bool | None = None,
              threshold_pct: float | None = None) -> None:
        """The terminal report (as ``heatline script.py`` prints it) on ``file`` (stdout)."""
        from heatline.renderers import View
        from heatline.renderers.terminal import print_report

        view = View(self.reduced if reduced is None else reduced,
                    self.threshold_pct if threshold_pct is None else threshold_pct)
        print_report(self.data, sys.stdout if file is None else file, view)

    def save(self, path: Any, format: str | None = None) -> None:  # noqa: A002 -- the CLI's word
        """Write the profile to ``path`` in ``format`` (default: from the suffix, as ``-o``)."""
        from heatline.options import FORMATS
        from heatline.renderers import View, render_to

        if format is not None and format not in FORMATS:
            raise HeatlineError(f"format must be one of {', '.join(FORMATS)}, not {format!r}")
        render_to(self.data, format, os.fspath(path), View(self.reduced, self.threshold_pct))

    @property
    def elapsed_s(self) -> float:
        return float(self.data["elapsed_s"])

    @property
    def time_s(self) -> float:
        """All time charged to lines, summed over threads (``totals.attributed_s``)."""
        return float(self.data["totals"]["attributed_s"])

    @property
    def peak_bytes(self) -> int:
        """Peak of the memory allocated while profiling and alive at once (0 with cpu_only)."""
        return int(self.data["peak_bytes"])

    @property
    def peak_at(self) -> tuple[str, int] | None:
        """(file, line) allocating when the peak was reached, or None. With child processes
        the peak is the processes' combined one, and this is the line holding the most memory
        at its moment (``data["combined_peak"]`` lists every process's lines then)."""
        at = self.data.get("peak_at")
        return None if not at else (at["file"], at["line"])

    @property
    def step_durations_s(self) -> list[float]:
        """Each training step's wall time, in order (the profile's ``steps``: step N runs
        from the Nth heatline.step() call, or else Optimizer.step(), to the next); empty when
        the program marked fewer than two. ``data["steps"]`` has their statistics, what marked
        them and the --steps window."""
        return list((self.data.get("steps") or {}).get("durations_s", []))

    def lines(self) -> list[LineStats]:
        """Every line that took time or memory, by file then line number."""
        result = []
        for path, entry in self.data["files"].items():
            for line in entry["lines"]:
                if line.get("function") is None and not any(line.get(k, 0) for k in _STAT_KEYS):
                    continue  # a context line
                result.append(LineStats(path, line["line"], line.get("function") or "",
                                        line["source"], *(line.get(k, 0) for k in _STAT_KEYS)))
        return result

    def functions(self) -> list[FunctionStats]:
        """Every function that took time or memory."""
        return [
            FunctionStats(path, function["qualname"], function["first_line"],
                          *(function.get(k, 0) for k in _STAT_KEYS))
            for path, entry in self.data["files"].items()
            for function in entry["functions"]
        ]

    def leaks(self) -> list[Leak]:
        """The lines flagged as likely leaks, the most memory held first."""
        found = [
            Leak(path, line["line"], line.get("function") or "", line["leak"]["likelihood"],
                 line["growth_bytes"], line["leak"]["growth_bytes_per_s"])
            for path, entry in self.data["files"].items()
            for line in entry["lines"]
            if line.get("leak")
        ]
        return sorted(found, key=lambda leak: (-leak.growth_bytes, -leak.likelihood))

    def regions(self) -> list[RegionStats]:
        """The regions, the longest wall time first (empty when none was entered)."""
        return [RegionStats(r["path"], r["name"], r["count"], r["wall_s"],
                            *(r[k] for k, _ in _LABEL_TIMES),
                            *(r.get(k, 0) for k, _ in _LABEL_MEMORY))
                for r in self.data.get("regions", [])]

    def modules(self) -> list[ModuleStats]:
        """The torch modules, the longest wall time first (empty without torch)."""
        return [ModuleStats(m["path"], m["class"], m["root"], m["count"], m["wall_s"],
                            m["self_s"], *(m[k] for k, _ in _LABEL_TIMES),
                            *(m.get(k, 0) for k, _ in _LABEL_MEMORY))
                for m in self.data.get("modules", [])]

    def __repr__(self) -> str:
        if self._data is None:
            return "<heatline.Profile (being taken)>"
        return (f"<heatline.Profile {self.elapsed_s:.3f}s, {len(self.lines())} lines, "
                f"peak {self.peak_bytes} bytes>")
