"""heatline's options, in one table: the command-line parsers (heatline/cli/), the split
between heatline's options and the program's command line, the values the runner gets
(:class:`Options`), the engine's start arguments (``Session``) and the option reference
(docs/cli.md) are all derived from it, and every default lives here.

This module is imported with the CLI, before the program runs: it imports nothing but os.
"""

from __future__ import annotations

import os  # imported by the interpreter's start-up already: costs nothing

# typing only for type checkers: a run's path imports none (heatline/__init__.py).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable

# One name, one default and one valid range per quantity, from the command line to the engine
# and back: the option's dest, the Session keyword, the engine's start() keyword, the C field
# (_ns where these say _s) and the profile's key say the same words, and the flag is that name
# without its unit (--memory-sampling-window BYTES: memory_sampling_window_bytes). The defaults
# and ranges are declared here only: setup.py compiles the engine with the ranges of its start
# options (HL_MAX_SAMPLING_INTERVAL_S...), so it refuses exactly what the parsers below refuse.

# Mean time between samples, seconds: greater than 0, at most MAX_SAMPLING_INTERVAL_S.
DEFAULT_SAMPLING_INTERVAL_S = 0.01
MAX_SAMPLING_INTERVAL_S = 1.0
# Mean bytes allocated (or copied) between memory samples; see memhooks.c for the maths. At this
# window a line that allocates 10 MB in small objects gets ~160 samples (about 3% error) and an
# allocation-heavy program takes a few thousand samples per second.
DEFAULT_MEMORY_SAMPLING_WINDOW_BYTES = 64 * 1024
MIN_MEMORY_SAMPLING_WINDOW_BYTES = 64
MAX_MEMORY_SAMPLING_WINDOW_BYTES = 1 << 30
# Lines and functions with at least this share of the time are highlighted (and kept by
# --reduced-profile).
DEFAULT_THRESHOLD_PCT = 1.0
# --write-interval: seconds between writes of the profile so far, greater than 0.
MAX_WRITE_INTERVAL_S = 1e6


def _usage_error(message: str) -> Exception:
    import argparse  # converters only run while argparse parses

    return argparse.ArgumentTypeError(message)


def _float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return float("nan")  # fails every range check below


def _interval(text: str) -> float:
    value = _float(text)
    if not 0 < value <= MAX_SAMPLING_INTERVAL_S:  # also rejects nan
        raise _usage_error(
            f"must be a number of seconds greater than 0 and at most "
            f"{MAX_SAMPLING_INTERVAL_S:g}, not {text!r}"
        )
    return value


def _seconds(text: str) -> float:
    value = _float(text)
    if not 0 < value <= MAX_WRITE_INTERVAL_S:  # also rejects nan and inf
        raise _usage_error(f"must be a number of seconds greater than 0, not {text!r}")
    return value


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= 1 << 40:
        raise _usage_error(f"must be a whole number of allocations, at least 1, not {text!r}")
    return value


def _percent(text: str) -> float:
    value = _float(text)
    if not 0 <= value <= 100:
        raise _usage_error(f"must be a percentage from 0 to 100, not {text!r}")
    return value


def _window(text: str) -> int:
    from heatline.units import parse_size  # converters only run while parsing

    try:
        value = parse_size(text)
    except ValueError:
        value = 0
    if not MIN_MEMORY_SAMPLING_WINDOW_BYTES <= value <= MAX_MEMORY_SAMPLING_WINDOW_BYTES:
        raise _usage_error(
            f"must be a number of bytes from {MIN_MEMORY_SAMPLING_WINDOW_BYTES} to "
            f"{MAX_MEMORY_SAMPLING_WINDOW_BYTES >> 30}G (e.g. 65536 or 64K), not {text!r}"
        )
    return value


# The output formats (heatline.renderers renders them).
FORMATS = ("terminal", "json", "html", "collapsed", "speedscope", "pprof", "chrome", "otlp")


def _format(text: str) -> str:
    if text not in FORMATS:
        raise _usage_error(f"must be one of {', '.join(FORMATS)}, not {text!r}")
    return text


def _patterns(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


class Option:
    """One option: its flags, where its value goes, its default and its help.

    A flag (no metavar) is a store_true option with default False. ``dest`` is the value's
    name (default: the last flag's, in Python spelling); ``session`` names the Session
    argument it feeds, if any; ``view`` marks options ``heatline view`` has too.
    """

    __slots__ = (
        "flags", "dest", "default", "metavar", "parse", "help", "session", "view", "negatable",
        "repeat",
    )

    def __init__(
        self,
        flags: tuple[str, ...],
        help: str,  # noqa: A002 -- argparse's word
        *,
        dest: str | None = None,
        default: Any = False,
        metavar: str | None = None,
        parse: Callable[[str], Any] | None = None,
        session: str | None = None,
        view: bool = False,
        negatable: bool = False,  # also --no-FLAG; the default None means "not given"
        repeat: bool = False,  # may be given more than once: the values are collected in a list
    ) -> None:
        self.flags = flags
        self.dest = dest or flags[-1].lstrip("-").replace("-", "_")
        self.default = default
        self.metavar = metavar
        self.parse = parse
        self.help = help
        self.session = session
        self.view = view
        self.negatable = negatable
        self.repeat = repeat

    @property
    def takes_value(self) -> bool:
        return self.metavar is not None

    @property
    def all_flags(self) -> tuple[str, ...]:
        """Every spelling on the command line, --no-FLAG included for a negatable option."""
        if not self.negatable:
            return self.flags
        return self.flags + tuple("--no-" + flag[2:] for flag in self.flags)


# In the order of `heatline --help`.
RUN_OPTIONS = (
    Option(
        ("-o", "--outfile"),
        "also write the profile to FILE, in the format its suffix names (.html, .json, "
        ".pb.gz, .speedscope.json, .collapsed, .trace.json, .otlp.pb; anything else: JSON) "
        "or --format",
        default=None,
        metavar="FILE",
    ),
    Option(("-q", "--quiet"), "do not print the report (to stderr) at the end"),
    Option(
        ("--profile-all",),
        "profile all code, including the standard library and installed packages",
        session="profile_all",
    ),
    Option(
        ("--profile-only",),
        "profile only files whose path contains one of these comma-separated substrings "
        "(library files too)",
        default=[],
        metavar="PATTERNS",
        parse=_patterns,
        session="only",
    ),
    Option(
        ("--profile-exclude",),
        "do not profile files whose path contains one of these comma-separated substrings",
        default=[],
        metavar="PATTERNS",
        parse=_patterns,
        session="exclude",
    ),
    Option(
        ("--sampling-interval",),
        f"mean time between samples (default: {DEFAULT_SAMPLING_INTERVAL_S:g})",
        dest="sampling_interval_s",
        default=DEFAULT_SAMPLING_INTERVAL_S,
        metavar="SECONDS",
        parse=_interval,
        session="sampling_interval_s",
    ),
    Option(("--cpu-only",), "profile CPU time only: no memory or copy profiling"),
    Option(
        ("--memory-sampling-window",),
        "mean number of bytes allocated (or copied) between memory samples; smaller is "
        f"more precise and slower (default: {DEFAULT_MEMORY_SAMPLING_WINDOW_BYTES // 1024}K)",
        dest="memory_sampling_window_bytes",
        default=DEFAULT_MEMORY_SAMPLING_WINDOW_BYTES,
        metavar="BYTES",
        parse=_window,
    ),
    Option(
        ("--gpu",),
        "profile NVIDIA GPUs: time, copies and memory per launching line, device "
        "utilisation (default: on where NVML finds a GPU)",
        default=None,
        negatable=True,
    ),
    Option(
        ("--native",),
        "show which native (C) functions each line's native time went to, from the "
        "kernel's per-thread CPU-clock samples (perf_event_open; default: on)",
        default=True,
        negatable=True,
        session="native",
    ),
    Option(
        ("--cpu-percent-threshold",),
        "lines and functions with at least this share of "
        f"the time are highlighted (default: {DEFAULT_THRESHOLD_PCT:g})",
        dest="threshold_pct",
        default=DEFAULT_THRESHOLD_PCT,
        metavar="PERCENT",
        parse=_percent,
        view=True,
    ),
    Option(
        ("--reduced-profile",),
        "show only lines at or above the --cpu-percent-threshold",
        view=True,
    ),
    Option(
        ("--malloc-threshold",),
        "report a line's allocations only when it allocated at least N sampling windows "
        "of bytes (Scalene's 'at least N allocations'; default: 1, every line)",
        default=1,
        metavar="N",
        parse=_count,
        view=True,
    ),
    Option(
        ("--use-virtual-time",),
        "count only running time (Python and native), not time blocked in sleep, I/O or locks",
    ),
    Option(
        ("--format",),
        "the format of -o, whatever its suffix: terminal, json, html, collapsed, speedscope, "
        "pprof, chrome or otlp (also --html, --json)",
        default=None,
        metavar="FORMAT",
        parse=_format,
        view=True,
    ),
    Option(
        ("--no-children",),
        "do not profile the Python child processes the program starts (fork, "
        "multiprocessing, subprocess of python); by default they are profiled and merged",
    ),
    Option(
        ("--write-interval",),
        "also write the profile (-o) every SECONDS while the program runs, each time "
        "replacing the file whole (default: only at the end)",
        dest="write_interval_s",
        default=None,
        metavar="SECONDS",
        parse=_seconds,
    ),
    Option(
        ("--pprof-server",),
        "serve the running profile over HTTP as Go's net/http/pprof does: "
        "/debug/pprof/profile?seconds=N (CPU time of the next N seconds) and /debug/pprof/heap "
        "(memory held per line), gzipped pprof for `go tool pprof` and scrapers, and "
        "/debug/otlp/profile?seconds=N, the CPU profile as OTLP profiles; HOST:PORT, "
        "HOST loopback when empty, PORT 0 a free one (printed on stderr). Any HOST but "
        "loopback lets others read the program's code locations",
        default=None,
        metavar="HOST:PORT",
        parse=lambda text: _address(text),
    ),
    Option(
        ("--off",),
        "start paused; the program calls heatline.resume() to start",
        session="paused",
    ),
    Option(
        ("--steps",),
        "profile only training steps A to B (inclusive, counted from 1): step N runs from the "
        "Nth heatline.step() call, or else PyTorch Optimizer.step(), to the next; profiling is "
        "off before and after",
        default=None,
        metavar="A:B",
        parse=lambda text: _step_window(text),
        session="steps",
    ),
)


def _step_window(text: str) -> tuple[int, int]:
    """A:B (whole numbers, 1 <= A <= B) -> (A, B)."""
    first, sep, last = text.partition(":")
    try:
        window = (int(first), int(last)) if sep else None
    except ValueError:
        window = None
    if window is None:
        raise _usage_error(f"must be A:B, two step numbers (e.g. 4:6), not {text!r}")
    if window[0] < 1:
        raise _usage_error(f"steps are counted from 1, not {text!r}")
    if window[1] < window[0]:
        raise _usage_error(f"the last step comes before the first in {text!r}")
    return window


def _address(text: str) -> tuple[str, int]:
    """HOST:PORT (HOST empty: loopback; [v6]:PORT) -> (host, port)."""
    host, sep, port_text = text.rpartition(":")
    if not sep:
        raise _usage_error(f"must be HOST:PORT (e.g. 127.0.0.1:6060, or :0 for a free port on "
                           f"loopback), not {text!r}")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    try:
        port = int(port_text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise _usage_error(f"the port must be a whole number from 0 to 65535, not {text!r}")
    return host or "127.0.0.1", port


def _whole(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise _usage_error(f"must be a whole number, not {text!r}") from None


def _process(text: str) -> str:
    """A process of a merged profile: PID, or HOST:PID (its key in process_profiles)."""
    number = text.rpartition(":")[2].partition("#")[0]
    if not number.isdigit():
        raise _usage_error(f"must be a process id (PID or HOST:PID), not {text!r}")
    return text


def _rows(text: str) -> int:
    value = _whole(text)
    if value < 1:
        raise _usage_error(f"must be a whole number of rows, at least 1, not {text!r}")
    return value


def _growth(text: str) -> float:
    value = _float(text)
    if not 0 <= value < float("inf"):
        raise _usage_error(f"must be a percentage of 0 or more, not {text!r}")
    return value


# `heatline view`: the run options marked view=True, then these.
VIEW_OPTIONS = (
    Option(("-o", "--outfile"), "write to FILE, not stdout", default=None, metavar="FILE"),
    Option(("--pid",), "show only this process of a profile with child processes (HOST:PID "
           "where processes of several hosts share the pid)",
           default=None, metavar="PID", parse=_process),
)

# `heatline merge`.
MERGE_OPTIONS = (
    Option(("-o", "--outfile"), "write the merged profile (JSON) to FILE (required)",
           default=None, metavar="FILE"),
)

# `heatline diff`.
DIFF_OPTIONS = (
    Option(("--fail-on-regression",), "exit with status 1 when the total time, or one "
           "function's time, grew by more than PCT percent of the before total",
           default=None, metavar="PCT", parse=_growth),
    Option(("--limit",), "rows per table (default: 20)", default=20, metavar="N", parse=_rows),
)


def _units(parse: Callable[[Any], Any]) -> Callable[[str], Any]:
    def convert(text: str) -> Any:
        try:
            return parse(text)
        except ValueError as exc:
            raise _usage_error(str(exc)) from None

    return convert


def _size(text: str) -> int:
    from heatline.units import parse_size

    return _units(parse_size)(text)


def _duration(text: str) -> float:
    from heatline.units import parse_seconds

    return _units(parse_seconds)(text)


def _line_limit(text: str) -> tuple[str, int, int]:
    from heatline.units import parse_line_limit

    return _units(parse_line_limit)(text)


# The limits of `heatline check` (heatline.data.budget.Budget has the same names; a budget file's
# keys are these flags without the dashes in front).
CHECK_OPTIONS = (
    Option(("--budget",), "read limits from FILE (TOML, or JSON when it ends in .json; the "
           "[tool.heatline.check] table of a pyproject.toml); flags given too override it",
           default=None, metavar="FILE"),
    Option(("--max-peak",), "fail when the program's peak memory exceeds SIZE (e.g. 500MiB; "
           "K, M, G are powers of 1024, as in the report and --memory-sampling-window)",
           default=None, metavar="SIZE", parse=_size),
    Option(("--max-time",), "fail when the wall time exceeds DURATION (e.g. 30s, 500ms, 2m)",
           default=None, metavar="DURATION", parse=_duration),
    Option(("--max-cpu",), "fail when the process's CPU time exceeds DURATION",
           default=None, metavar="DURATION", parse=_duration),
    Option(("--no-leaks",), "fail when any line is flagged as a likely leak"),
    Option(("--max-line-peak",), "fail when line LINE of FILE (a path or its end, e.g. "
           "app.py) held more than SIZE at its peak; may be repeated", default=[],
           metavar="FILE:LINE=SIZE", parse=_line_limit, repeat=True),
)


# `heatline dump PID`.
DUMP_OPTIONS = (
    Option(("--json",), "write the stacks as JSON (docs/profile-format.md, \"heatline dump's "
           "JSON\") instead of text"),
    Option(("--no-pause",), "read the stacks without stopping the process's threads (by default "
           "they are stopped for the fraction of a millisecond the reading takes): a thread that "
           "moves meanwhile may show a torn stack, marked as such"),
    Option(("--locals",), "also show each frame's local variables: names and short values read "
           "from outside (numbers, None, True, False, str and bytes cut at 40 characters; a "
           "list, tuple, dict or set as its type and length; any other object as its type)"),
)

# `heatline top PID`: it reads another process, each reading costing it nothing but taking
# heatline's own CPU, so its interval has a floor the in-process sampler does not need.
DEFAULT_TOP_SAMPLING_INTERVAL_S = 0.01
MIN_TOP_SAMPLING_INTERVAL_S = 0.001
DEFAULT_TOP_REFRESH_S = 1.0


def _top_interval(text: str) -> float:
    value = _float(text)
    if not MIN_TOP_SAMPLING_INTERVAL_S <= value <= MAX_SAMPLING_INTERVAL_S:  # also rejects nan
        raise _usage_error(
            f"must be a number of seconds from {MIN_TOP_SAMPLING_INTERVAL_S:g} to "
            f"{MAX_SAMPLING_INTERVAL_S:g}, not {text!r}"
        )
    return value


TOP_OPTIONS = (
    Option(("--sampling-interval",), "mean time between readings (each interval is drawn "
           f"from 0.5-1.5 times it); default {DEFAULT_TOP_SAMPLING_INTERVAL_S:g}",
           dest="sampling_interval_s", metavar="SECONDS", parse=_top_interval,
           default=DEFAULT_TOP_SAMPLING_INTERVAL_S),
    Option(("--refresh",), "seconds between two views (each shows the time since the one "
           f"before); default {DEFAULT_TOP_REFRESH_S:g}", metavar="SECONDS", parse=_seconds,
           default=DEFAULT_TOP_REFRESH_S),
    Option(("--once",), "read for one --refresh interval, print that view as text and exit"),
    Option(("--rows",), "at most this many function rows per view (default: what the terminal "
           "holds; 25 when not writing to a terminal)", metavar="N", parse=_rows, default=None),
)


ATTACH_OPTIONS = (
    Option(("--duration",), "detach after DURATION (e.g. 10, 30s, 2m; default: at Ctrl-C)",
           default=None, metavar="DURATION", parse=_duration),
)

# Flags of earlier releases, each with what replaced it: given one, any heatline command stops
# with a one-line error naming the new flag (cli/common.py, refuse_renamed), never with the old
# meaning (--rate counted readings per second, --sampling-interval takes seconds).
RENAMED_FLAGS = {
    "--cpu-sampling-rate": "--sampling-interval (seconds between samples)",
    "--cpu-sampling-interval": "--sampling-interval",
    "--profile-interval": "--write-interval",
    "--rate": "--sampling-interval (seconds between readings: 0.01 is 100 a second)",
}

# heatline's own package directory, with a trailing separator.
PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def only_implies_all(values: dict[str, Any]) -> None:
    """As in Scalene, --profile-only names the files to profile even in the standard library
    or installed packages: files it does not name stay out anyway, only heatline's own
    package (PACKAGE_DIR) needs excluding. Changes ``values`` (keyed by dest) in place."""
    if values.get("profile_only") and not values.get("profile_all"):
        values["profile_all"] = True
        values["profile_exclude"] = [*values.get("profile_exclude", []), PACKAGE_DIR]


class Options:
    """The value of every option of RUN_OPTIONS, as attributes named by their ``dest``
    (``outfile``, ``quiet``, ``sampling_interval_s``...); what is not given is the default."""

    def __init__(self, **values: Any) -> None:
        for option in RUN_OPTIONS:
            default = option.default
            value = values.pop(option.dest, default)
            setattr(self, option.dest, list(value) if isinstance(default, list) else value)
        if values:
            raise TypeError(f"unknown options: {', '.join(sorted(values))}")

    def session_arguments(self) -> dict[str, Any]:
        """The keyword arguments of Session that the options set."""
        arguments = {
            option.session: getattr(self, option.dest) for option in RUN_OPTIONS if option.session
        }
        arguments["memory_sampling_window_bytes"] = (
            0 if self.cpu_only else self.memory_sampling_window_bytes
        )
        arguments["gpu"] = 2 if self.gpu is None else int(self.gpu)  # 2: auto
        return arguments
