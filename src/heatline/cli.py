"""Command line: ``heatline [options] script.py [args...]``, ``heatline [options] -m module
[args...]``, ``heatline run ...`` (the same, explicitly) and ``heatline view profile.json``.

Every mistake on the command line is reported as one ``heatline: error: ...`` line on stderr,
never as a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from heatline import __version__
from heatline.session import DEFAULT_MEMORY_WINDOW

USAGE = """\
heatline [options] script.py [args...]
       heatline [options] -m module [args...]
       heatline run [options] script.py [args...]
       heatline view [--reduced-profile] [--cpu-percent-threshold N] profile.json"""

DESCRIPTION = """\
Run a Python program and show, line by line, where its time goes: running Python code
(Python), in native code it called (native), or waiting on the system (system); and which
lines allocate memory (Python objects or native buffers), hold it at the peak, leak it, or
copy it.
The program runs as it would under 'python': its stdout is untouched; heatline's report is
written to stderr after the program finishes. Options must come before the script; everything
after the script (or -m module) is passed to the program."""

EPILOG = """\
To profile a script named 'run' or 'view', use 'heatline ./view' (or 'heatline run view').
Profile just part of a program by starting with --off and calling heatline.resume() (and
heatline.pause()) in it."""


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line, not the usage text plus a message."""

    def error(self, message: str) -> NoReturn:
        fail(message)


def fail(message: str, status: int = 2) -> NoReturn:
    sys.stderr.write(f"heatline: error: {message}\n")
    sys.stderr.flush()
    raise SystemExit(status)


def _interval(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value <= 1:  # also rejects nan
        raise argparse.ArgumentTypeError(
            f"must be a number of seconds greater than 0 and at most 1, not {text!r}"
        )
    return value


def _percent(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 <= value <= 100:
        raise argparse.ArgumentTypeError(f"must be a percentage from 0 to 100, not {text!r}")
    return value


def _window(text: str) -> int:
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    number, scale = text.strip().lower().rstrip("ib"), 1
    if number[-1:] in units:
        number, scale = number[:-1], units[number[-1]]
    try:
        value = int(float(number) * scale)
    except ValueError:
        value = 0
    if not 64 <= value <= 1 << 30:
        raise argparse.ArgumentTypeError(
            f"must be a number of bytes from 64 to 1G (e.g. 65536 or 64K), not {text!r}"
        )
    return value


def _patterns(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _run_parser() -> _Parser:
    parser = _Parser(
        prog="heatline",
        usage=USAGE,
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,
    )
    parser.add_argument(
        "-m", metavar="MODULE", dest="module", help="profile a module run as 'python -m MODULE'"
    )
    parser.add_argument(
        "-o",
        "--outfile",
        metavar="FILE",
        help="also write the profile as JSON to FILE (see 'heatline view')",
    )
    parser.add_argument(
        "-q", "--quiet", action="store_true", help="do not print the report (to stderr) at the end"
    )
    parser.add_argument(
        "--profile-all",
        action="store_true",
        help="profile all code, including the standard library and installed packages",
    )
    parser.add_argument(
        "--profile-only",
        metavar="PATTERNS",
        type=_patterns,
        default=[],
        help="profile only files whose path contains one of these comma-separated substrings",
    )
    parser.add_argument(
        "--profile-exclude",
        metavar="PATTERNS",
        type=_patterns,
        default=[],
        help="do not profile files whose path contains one of these comma-separated substrings",
    )
    parser.add_argument(
        "--cpu-sampling-interval",
        metavar="SECONDS",
        type=_interval,
        default=0.01,
        help="mean time between samples (default: 0.01)",
    )
    parser.add_argument(
        "--cpu-only",
        action="store_true",
        help="profile CPU time only: no memory or copy profiling",
    )
    parser.add_argument(
        "--memory-sampling-window",
        metavar="BYTES",
        type=_window,
        default=DEFAULT_MEMORY_WINDOW,
        help="mean number of bytes allocated (or copied) between memory samples; smaller is "
        f"more precise and slower (default: {DEFAULT_MEMORY_WINDOW // 1024}K)",
    )
    parser.add_argument(
        "--gpu",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="profile NVIDIA GPUs: time, copies and memory per launching line, device "
        "utilisation (default: on where NVML finds a GPU)",
    )
    _add_view_options(parser)
    parser.add_argument(
        "--off",
        action="store_true",
        help="start paused; the program calls heatline.resume() to start",
    )
    parser.add_argument("--version", action="version", version=f"heatline {__version__}")
    return parser


def _add_view_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--cpu-percent-threshold",
        metavar="PERCENT",
        type=_percent,
        default=1.0,
        help="lines and functions with at least this share of "
        "the time are highlighted (default: 1)",
    )
    parser.add_argument(
        "--reduced-profile",
        action="store_true",
        help="show only lines at or above the --cpu-percent-threshold",
    )


def _view_parser() -> _Parser:
    parser = _Parser(
        prog="heatline view", description="Show a profile written with -o.", allow_abbrev=False
    )
    _add_view_options(parser)
    parser.add_argument("profile", metavar="profile.json", help="the profile to show")
    return parser


# Options of the run parser that take a value, so the scan below knows to skip it.
_VALUE_OPTIONS = frozenset(
    {
        "-o",
        "--outfile",
        "--profile-only",
        "--profile-exclude",
        "--cpu-sampling-interval",
        "--cpu-percent-threshold",
        "--memory-sampling-window",
    }
)
_SHORT_FLAGS = frozenset("qh")


def split_argv(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """Split ``argv`` into heatline's options and the program's command line.

    The program's command line starts at the first positional argument (the script) or at
    ``-m``; it is handed over untouched, so the program's own options never reach argparse.
    Returns (options, program) where program is [] (none given), [script, *args] or
    ["-m", module, *args].
    """
    argv = list(argv)
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            return argv[:i], argv[i + 1 :]
        if arg.startswith("--"):
            # "--opt=value" carries its own value; "--opt value" takes the next argument.
            i += 2 if arg in _VALUE_OPTIONS else 1
        elif arg.startswith("-") and arg != "-":
            cluster = arg[1:]  # short options, possibly combined: -q, -ofile, -qo file, -mmod
            for position, letter in enumerate(cluster):
                attached = cluster[position + 1 :]
                if letter == "m":
                    flags = [f"-{cluster[:position]}"] if position else []
                    if attached:
                        return argv[:i] + flags, ["-m", attached, *argv[i + 1 :]]
                    if i + 1 == len(argv):
                        return argv, []  # argparse reports the missing module name
                    return argv[:i] + flags, ["-m", *argv[i + 1 :]]
                if letter not in _SHORT_FLAGS:  # -o (or an unknown option argparse reports)
                    i += 2 if letter == "o" and not attached else 1
                    break
            else:
                i += 1
        else:
            return argv[:i], argv[i:]
    return argv, []


def check_outfile(path: str) -> str:
    """The absolute path of a writable -o file, or a usage error before anything runs."""
    path = os.path.abspath(path)
    parent = os.path.dirname(path)
    if os.path.isdir(path):
        fail(f"can't write the profile to '{path}': it is a directory")
    if not os.path.isdir(parent):
        fail(f"can't write the profile to '{path}': directory '{parent}' does not exist")
    if os.path.exists(path):
        if not os.access(path, os.W_OK):
            fail(f"can't write the profile to '{path}': permission denied")
    elif not os.access(parent, os.W_OK | os.X_OK):
        fail(f"can't write the profile to '{path}': directory '{parent}' is not writable")
    return path


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``heatline`` command; returns the exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["view"]:
        return _view(args[1:])
    if args[:1] == ["run"]:
        args = args[1:]
    return _run(args)


def _run(args: list[str]) -> int:
    from heatline import runner

    option_args, program = split_argv(args)
    options = _run_parser().parse_args(option_args)
    if program[:1] == ["-"]:
        fail("reading the program from stdin is not supported; give a script file")
    if not program:  # (-m MODULE never reaches argparse: split_argv put it in program)
        fail(
            "no program to profile: give a script (heatline script.py) or a module "
            "(heatline -m module); see heatline --help"
        )
    run_options = runner.Options(
        outfile=check_outfile(options.outfile) if options.outfile is not None else None,
        quiet=options.quiet,
        reduced=options.reduced_profile,
        threshold_pct=options.cpu_percent_threshold,
        interval_s=options.cpu_sampling_interval,
        profile_all=options.profile_all,
        only=options.profile_only,
        exclude=options.profile_exclude,
        paused=options.off,
        memory_window=0 if options.cpu_only else options.memory_sampling_window,
        gpu=2 if options.gpu is None else int(options.gpu),
    )
    try:
        if program[:1] == ["-m"]:
            return runner.run_module(program[1], program[2:], run_options)
        return runner.run_script(program[0], program[1:], run_options)
    except runner.ProgramError as exc:
        fail(str(exc), exc.status)


def _view(args: list[str]) -> int:
    from heatline import profile

    options = _view_parser().parse_args(args)
    try:
        data = profile.load(options.profile)
    except profile.ProfileError as exc:
        fail(str(exc), 1)
    from heatline.renderers.terminal import render

    render(
        data,
        file=sys.stdout,
        reduced=options.reduced_profile,
        threshold_pct=options.cpu_percent_threshold,
    )
    return 0
