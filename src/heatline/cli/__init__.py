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
from typing import TYPE_CHECKING, NoReturn

from heatline import __version__
from heatline.options import CHECK_OPTIONS, RUN_OPTIONS, Option, Options, only_implies_all

if TYPE_CHECKING:
    from heatline.run.launch import Launch

USAGE = """\
heatline [options] script.py [args...]
       heatline [options] -m module [args...]
       heatline run [options] script.py [args...]
       heatline view [--format F] [-o OUT] [--reduced-profile] [--cpu-percent-threshold N]
                     profile.json
       heatline diff [--fail-on-regression PCT] before.json after.json
       heatline check [limits] profile.json
       heatline check [limits] [options] script.py [args...]   (or -m module [args...])
       heatline ctl on|off|status PID"""

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
heatline.pause()) in it, or from another shell with 'heatline ctl on PID' (and off)."""


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line, not the usage text plus a message."""

    def error(self, message: str) -> NoReturn:
        fail(message)


def fail(message: str, status: int = 2) -> NoReturn:
    sys.stderr.write(f"heatline: error: {message}\n")
    sys.stderr.flush()
    raise SystemExit(status)


def _add(parser: argparse.ArgumentParser, option: Option) -> None:
    if option.takes_value:
        kwargs: dict = {"metavar": option.metavar, "default": option.default}
        if option.repeat:
            kwargs.update(action="append", default=None)
        if option.parse is not None:
            kwargs["type"] = option.parse
    elif option.negatable:
        kwargs = {"action": argparse.BooleanOptionalAction, "default": option.default}
    else:
        kwargs = {"action": "store_true"}
    parser.add_argument(*option.flags, dest=option.dest, help=option.help, **kwargs)


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
    for option in RUN_OPTIONS:
        _add(parser, option)
    _add_format_shortcuts(parser)
    parser.add_argument("--version", action="version", version=f"heatline {__version__}")
    return parser


def _add_format_shortcuts(parser: argparse.ArgumentParser) -> None:
    for name in ("html", "json"):
        parser.add_argument(f"--{name}", dest="format", action="store_const", const=name,
                            help=f"same as --format {name} (without -o: writes profile.{name})")


def _view_parser() -> _Parser:
    parser = _Parser(
        prog="heatline view", description="Show a profile written with -o.", allow_abbrev=False
    )
    for option in RUN_OPTIONS:
        if option.view:
            _add(parser, option)
    _add_format_shortcuts(parser)
    parser.add_argument("-o", "--outfile", metavar="FILE", help="write to FILE, not stdout")
    parser.add_argument(
        "--pid", type=int, default=None, metavar="PID",
        help="show only this process of a profile with child processes",
    )
    parser.add_argument("profile", metavar="profile.json", help="the profile to show")
    return parser


def _option_sets(options: Sequence[Option]) -> tuple[frozenset[str], frozenset[str]]:
    """What split_argv needs to know of a parser's options: which take a value (so the scan
    skips it), and which single letters are flags that may be combined (-q; -h from argparse)."""
    values = frozenset(flag for option in options if option.takes_value for flag in option.flags)
    shorts = frozenset(
        {"h"}
        | {
            flag[1]
            for option in options
            if not option.takes_value
            for flag in option.all_flags
            if len(flag) == 2
        }
    )
    return values, shorts


_VALUE_OPTIONS, _SHORT_FLAGS = _option_sets(RUN_OPTIONS)


def split_argv(
    argv: Sequence[str], value_options: frozenset[str] = _VALUE_OPTIONS,
    short_flags: frozenset[str] = _SHORT_FLAGS,
) -> tuple[list[str], list[str]]:
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
            i += 2 if arg in value_options else 1
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
                if letter not in short_flags:  # -o (or an unknown option argparse reports)
                    i += 2 if f"-{letter}" in value_options and not attached else 1
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
    prepared = prepare(argv)
    return prepared if isinstance(prepared, int) else prepared.run()


def prepare(argv: Sequence[str] | None = None) -> int | Launch:
    """Everything :func:`main` does before the program runs: an exit status when there is
    nothing to run (``view``, ``--help``), else the program ready to run (run.launch.Launch)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["view"]:
        return _view(args[1:])
    if args[:1] == ["diff"]:
        return _diff(args[1:])
    if args[:1] == ["check"]:
        return _check(args[1:])
    if args[:1] == ["ctl"]:
        return _ctl(args[1:])
    if args[:1] == ["run"]:
        args = args[1:]
    return _run(args)


def _run(args: list[str]) -> Launch:
    from heatline.run import launch

    option_args, program = split_argv(args)
    options = _run_parser().parse_args(option_args)
    if program[:1] == ["-"]:
        fail("reading the program from stdin is not supported; give a script file")
    if not program:  # (-m MODULE never reaches argparse: split_argv put it in program)
        fail(
            "no program to profile: give a script (heatline script.py) or a module "
            "(heatline -m module); see heatline --help"
        )
    values = vars(options)
    del values["module"]  # (-m MODULE never reaches argparse: split_argv put it in program)
    if values["outfile"] is None and values["format"] in ("html", "json"):
        values["outfile"] = f"profile.{values['format']}"  # as Scalene's --html / --json
    only_implies_all(values)
    if values["profile_interval"] is not None and values["outfile"] is None:
        fail("--profile-interval needs a file to write: give -o FILE (or --json, --html)")
    run_options = Options(**values)
    if run_options.outfile is not None:
        run_options.outfile = check_outfile(run_options.outfile)
    try:
        if program[:1] == ["-m"]:
            return launch.run_module(program[1], program[2:], run_options)
        return launch.run_script(program[0], program[1:], run_options)
    except launch.ProgramError as exc:
        fail(str(exc), exc.status)


def _view(args: list[str]) -> int:
    from heatline import data as profile

    options = _view_parser().parse_args(args)
    try:
        data = profile.load(options.profile)
    except profile.ProfileError as exc:
        fail(str(exc), 1)
    if options.pid is not None:
        from heatline.data.merge import process_view

        try:
            data = process_view(data, options.pid)
        except KeyError:
            pids = ", ".join(str(p["pid"]) for p in data.get("processes", [])) or "none"
            fail(f"'{options.profile}' has no process {options.pid} (processes: {pids})", 1)
    from heatline.renderers import format_for_path, render_bytes, render_to

    report = {
        "reduced": options.reduced_profile,
        "threshold_pct": options.cpu_percent_threshold,
        "malloc_threshold": options.malloc_threshold,
    }
    if options.outfile is not None:
        path = check_outfile(options.outfile)
        fmt = options.format or format_for_path(path)
        render_to(data, fmt, path, **(report if fmt == "terminal" else {}))
        return 0
    fmt = options.format or "terminal"
    if fmt == "terminal":
        from heatline.renderers.terminal import render

        render(data, file=sys.stdout, **report)
        return 0
    sys.stdout.flush()
    sys.stdout.buffer.write(render_bytes(data, fmt))
    sys.stdout.buffer.flush()
    return 0


def _growth(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a percentage of 0 or more, not {text!r}")
    return value


def _diff(args: list[str]) -> int:
    from heatline import data as profile
    from heatline.data import diff

    parser = _Parser(prog="heatline diff", description="Compare two profiles written with -o.",
                     allow_abbrev=False)
    parser.add_argument("--fail-on-regression", metavar="PCT", type=_growth,
                        help="exit with status 1 when the total time, or one function's time, "
                        "grew by more than PCT percent of the before total")
    parser.add_argument("--limit", metavar="N", type=int, default=20, help="rows per table")
    parser.add_argument("before", metavar="before.json")
    parser.add_argument("after", metavar="after.json")
    options = parser.parse_args(args)
    try:
        before, after = profile.load(options.before), profile.load(options.after)
    except profile.ProfileError as exc:
        fail(str(exc), 1)
    result = diff.compare(before, after)
    diff.report(result, sys.stdout, limit=options.limit)
    if options.fail_on_regression is not None:
        found = diff.regressions(result, options.fail_on_regression)
        for line in found:
            sys.stdout.write(f"regression: {line}\n")
        return 1 if found else 0
    return 0


# Options of `heatline check` that check itself uses in a run: the limits, and where (and in
# which format) to keep the profile; the other run options go to the profiled run.
_KEEP_OPTIONS = ("-o", "--outfile", "--format", "--html", "--json")
_CHECK_VALUES, _CHECK_SHORTS = _option_sets(CHECK_OPTIONS + RUN_OPTIONS)


def _check(args: list[str]) -> int:
    from heatline import data as profile
    from heatline.cli import check

    option_args, program = split_argv(args, _CHECK_VALUES, _CHECK_SHORTS)
    if program[:1] and program[0].endswith(".json"):
        # A profile, not a program: the limits may come after it (heatline check p.json --no-leaks)
        option_args, program = option_args + program[1:], program[:1]
    parser = _Parser(
        prog="heatline check",
        usage="heatline check [limits] profile.json\n"
        "       heatline check [limits] [options] script.py [args...]  (or -m module ...)",
        description="Check a profile (a .json file), or the run of a program, against limits: "
        "exit status 0 within budget, 1 with one line per limit exceeded, 2 for bad input. "
        "Running a program, the run options of 'heatline --help' apply, and a program "
        "that fails keeps its own exit status.",
        allow_abbrev=False,
    )
    for option in CHECK_OPTIONS + RUN_OPTIONS:
        _add(parser, option)
    _add_format_shortcuts(parser)
    options = parser.parse_args(option_args)
    budget = check.Budget()
    try:
        if options.budget is not None:
            budget = check.load_budget(options.budget)
        given = {option.dest: getattr(options, option.dest) for option in CHECK_OPTIONS[1:]}
        for name, value in given.items():
            if name == "max_line_peak":
                budget.max_line_peak.extend(value or [])
            elif value not in (None, False):
                setattr(budget, name, value)
    except check.BudgetError as exc:
        fail(str(exc))
    if budget.empty():
        fail("no limits to check: give --max-peak, --max-time, --max-cpu, --no-leaks, "
             "--max-line-peak or --budget FILE")
    if not program:
        fail("nothing to check: give a profile (.json) or a program to run")
    if program[0].endswith(".json"):
        _no_run_options(options, parser)
        try:
            data = profile.load(program[0])
        except profile.ProfileError as exc:
            fail(str(exc))
        return _report_check(data, budget, sys.stdout)
    keep = options.outfile and check_outfile(options.outfile)
    run_args = _without_keep_options(option_args, parser)
    return check.run_and_check(run_args, program, budget, keep, options.format,
                               lambda data, stream: _report_check(data, budget, stream))


def _no_run_options(options: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    for option in RUN_OPTIONS:
        if getattr(options, option.dest) != parser.get_default(option.dest):
            fail(f"{option.flags[-1]} applies to a run, not to a saved profile")


def _without_keep_options(option_args: list[str], parser: argparse.ArgumentParser) -> list[str]:
    """The run options to hand to the profiled run: all but the limits and -o/--format."""
    values = {flag for option in CHECK_OPTIONS for flag in option.flags if option.takes_value}
    values |= {"-o", "--outfile", "--format"}
    flags = {"--no-leaks", "--html", "--json"}
    kept, i = [], 0
    while i < len(option_args):
        arg = option_args[i]
        name = arg.split("=", 1)[0] if arg.startswith("--") else arg
        if name in values:
            i += 1 if "=" in arg and arg.startswith("--") else 2
            continue
        if name in flags or (arg.startswith("-o") and not arg.startswith("--")):
            i += 1
            continue
        if not arg.startswith("--") and "o" in arg[1:]:  # -qo FILE
            fail("give -o on its own (not combined with other short options) to heatline check")
        takes_value = arg in _VALUE_OPTIONS  # (--opt=value carries its own)
        kept.extend(option_args[i : i + 2] if takes_value else [arg])
        i += 2 if takes_value else 1
    return kept


def _report_check(data: dict, budget: object, stream: object) -> int:
    from heatline.cli import check

    try:
        found = check.breaches(data, budget)  # type: ignore[arg-type]
    except check.BudgetError as exc:
        fail(str(exc))
    for where in check.unmatched_line_limits(data, budget):  # type: ignore[arg-type]
        sys.stderr.write(f"heatline: warning: --max-line-peak {where}: no such file in the "
                         "profile (a file without time or memory is not listed)\n")
    for line in found:
        stream.write(f"heatline: over budget: {line}\n")  # type: ignore[attr-defined]
    if not found:
        stream.write(f"heatline: {check.summary(data, budget)}\n")  # type: ignore
    stream.flush()  # type: ignore[attr-defined]
    return 1 if found else 0


def _ctl(args: list[str]) -> int:
    from heatline.engine import control

    parser = _Parser(
        prog="heatline ctl",
        description="Turn the profiling of a running 'heatline' process on or off (start it "
        "with --off to profile only what you choose), or show whether it is on. Only your own "
        "processes can be controlled; no signal is sent.",
        allow_abbrev=False,
    )
    parser.add_argument("action", choices=("on", "off", "status"))
    parser.add_argument("pid", metavar="PID", type=int, help="the process id of the heatline run")
    options = parser.parse_args(args)
    try:
        if options.action == "status":
            state = control.status(options.pid)
        else:
            control.switch(options.pid, options.action == "on")
            state = options.action
    except control.ControlError as exc:
        fail(str(exc), 1)
    except OSError as exc:
        fail(f"can't control process {options.pid}: {exc.strerror or exc}", 1)
    sys.stdout.write(f"{options.pid}: profiling {state}\n")
    return 0
