"""``heatline [run] [options] script.py [args...]`` and ``heatline [options] -m module``:
profile a program (run/launch.py runs it)."""

from __future__ import annotations

from heatline._version import __version__
from heatline.cli.common import add_format_shortcuts, add_option, check_outfile, fail
from heatline.cli.common import option_default, refuse_renamed, split_argv
from heatline.options import RUN_OPTIONS, Options, only_implies_all
from heatline.run import launch

# typing only for type checkers: a run's path imports none (heatline/__init__.py).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from heatline.cli.common import Parser

USAGE = """\
heatline [options] script.py [args...]
       heatline [options] -m module [args...]
       heatline [options] console-script [args...]    (a Python script on PATH)
       heatline [options] -- command [args...]        (any command: its Python processes)
       heatline run [options] script.py [args...]
       heatline view [--format F] [-o OUT] [--reduced-profile] [--cpu-percent-threshold N]
                     profile.json
       heatline diff [--fail-on-regression PCT] before.json after.json
       heatline merge profile.json profile.json... -o OUT
       heatline check [limits] profile.json
       heatline check [limits] [options] script.py [args...]   (or -m module [args...])
       heatline ctl on|off|status PID
       heatline dump [--json] [--no-pause] PID
       heatline top [--sampling-interval SECONDS] [--once] PID
       heatline attach [--duration S] [-o FILE] [options] PID"""


DESCRIPTION = """\
Run a Python program and show, line by line, where its time goes: running Python code
(Python), in native code it called (native), or waiting on the system (system); and which
lines allocate memory (Python objects or native buffers), hold it at the peak, leak it, or
copy it.
The program runs as it would under 'python': its stdout is untouched; heatline's report is
written to stderr after the program finishes. Options must come before the script; everything
after the script (or -m module) is passed to the program."""


EPILOG = """\
A name that is no file here is looked up on PATH as a shell would ('heatline pytest -x'):
a Python script found there runs as it would run alone. 'heatline -- make test' runs any
command and profiles every Python process it starts, merged into one report.
To profile a script named 'run' or 'view', use 'heatline ./view' (or 'heatline run view').
Profile just part of a program by starting with --off and calling heatline.resume() (and
heatline.pause()) in it, or from another shell with 'heatline ctl on PID' (and off)."""


def parser() -> Parser:
    import argparse

    from heatline.cli import common

    parser = common.Parser(
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
        add_option(parser, option)
    add_format_shortcuts(parser)
    parser.add_argument("--version", action="version", version=f"heatline {__version__}")
    return parser



def _flags() -> dict[str, tuple[Any, str]]:
    """Each spelling parse_plainly reads: flag -> (option, what it does)."""
    table: dict[str, tuple[Any, str]] = {}
    for option in RUN_OPTIONS:
        kind = "value" if option.takes_value else "true"
        for flag in option.flags:
            table[flag] = (option, kind)
        if option.negatable and not option.takes_value:
            for flag in option.flags:
                if flag.startswith("--"):
                    table["--no-" + flag[2:]] = (option, "false")
    for name in ("html", "json"):  # add_format_shortcuts
        table[f"--{name}"] = (None, "format")
    return table


def parse_plainly(option_args: list[str]) -> dict[str, Any] | None:
    """What ``parser().parse_args(option_args)`` gives (as vars()), for command lines that
    spell each option plainly: ``--flag``, ``--no-flag``, ``--name VALUE``, ``--name=VALUE``,
    ``-x``, ``-x VALUE``; None for any other (combined short options, a value that starts with
    '-', --help, --version, a misspelling, a value its option refuses), which argparse then
    parses, and reports. Building argparse's parser of some 60 options, and importing
    argparse, cost a run about 19 M instructions (4 ms) of its start; tests/unit/test_cli.py
    holds the two to the same answers."""
    values: dict[str, Any] = {"module": None}
    for option in RUN_OPTIONS:
        default = option_default(option)
        if isinstance(default, str) and option.parse is not None:
            return None  # argparse would convert a string default: leave that to it
        values.setdefault(option.dest, default)
    flags = _flags()
    at = 0
    while at < len(option_args):
        argument = option_args[at]
        at += 1
        name, equals, attached = argument.partition("=") if argument.startswith("--") else (
            argument, "", "")
        option, kind = flags.get(name, (None, None))
        if kind is None or (equals and kind != "value"):
            return None
        if kind == "format":
            values["format"] = name[2:]
        elif kind in ("true", "false"):
            values[option.dest] = kind == "true"
        else:
            if equals:
                text = attached
            elif at < len(option_args) and not option_args[at].startswith("-"):
                text = option_args[at]
                at += 1
            else:
                return None
            try:
                value = option.parse(text) if option.parse is not None else text
            except (Exception, SystemExit):  # noqa: BLE001 -- argparse says what is wrong
                return None
            if option.repeat:
                values[option.dest] = [*(values[option.dest] or []), value]
            else:
                values[option.dest] = value
    return values


def _run_command(program: list[str], values: dict[str, Any]) -> int:
    """``heatline [options] -- command [args...]``: run the command, profiling every Python
    process it starts; its exit status."""
    from heatline.run import command

    if not program:
        fail("no command after '--': give one (heatline -- make test); see heatline --help")
    del values["module"]
    for dest, flag in (("no_children", "--no-children"), ("write_interval_s", "--write-interval"),
                       ("pprof_server", "--pprof-server")):
        if values.get(dest):
            fail(f"{flag} does not go with a command (heatline -- ...): its Python processes "
                 "are each a child of the command")
    if values["outfile"] is None and values["format"] in ("html", "json"):
        values["outfile"] = f"profile.{values['format']}"
    only_implies_all(values)
    run_options = Options(**values)
    if run_options.outfile is not None:
        run_options.outfile = check_outfile(run_options.outfile)
    try:
        return command.CommandRun(program, run_options).run()
    except command.ProgramError as exc:
        fail(str(exc), exc.status)


def prepare(args: list[str], command_allowed: bool = True) -> launch.Launch | int:
    """The program ready to run, the profiler started; a usage error exits. With
    ``heatline [options] -- command [args...]`` (``command_allowed``: not after ``heatline
    run``, where ``--`` only ends heatline's options) the command is run and profiled here,
    and its exit status returned (run/command.py)."""
    option_args, program = split_argv(args)
    command = (command_allowed and len(option_args) < len(args)
               and args[len(option_args)] == "--")
    refuse_renamed(option_args)
    values = parse_plainly(option_args)
    if values is None:
        values = vars(parser().parse_args(option_args))
    if command:
        return _run_command(program, values)
    if program[:1] == ["-"]:
        fail("reading the program from stdin is not supported; give a script file")
    if not program:  # (-m MODULE never reaches argparse: split_argv put it in program)
        fail(
            "no program to profile: give a script (heatline script.py) or a module "
            "(heatline -m module); see heatline --help"
        )
    del values["module"]  # (-m MODULE never reaches argparse: split_argv put it in program)
    if values["outfile"] is None and values["format"] in ("html", "json"):
        values["outfile"] = f"profile.{values['format']}"  # as Scalene's --html / --json
    only_implies_all(values)
    if values["write_interval_s"] is not None and values["outfile"] is None:
        fail("--write-interval needs a file to write: give -o FILE (or --json, --html)")
    run_options = Options(**values)
    if run_options.outfile is not None:
        run_options.outfile = check_outfile(run_options.outfile)
    try:
        if program[:1] == ["-m"]:
            return launch.run_module(program[1], program[2:], run_options)
        return launch.run_script(program[0], program[1:], run_options)
    except launch.ProgramError as exc:
        fail(str(exc), exc.status)

