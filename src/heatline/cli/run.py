"""``heatline [run] [options] script.py [args...]`` and ``heatline [options] -m module``:
profile a program (run/launch.py runs it)."""

from __future__ import annotations

import argparse

from heatline._version import __version__
from heatline.cli.common import Parser, add_format_shortcuts, add_option, check_outfile, fail
from heatline.cli.common import split_argv
from heatline.options import RUN_OPTIONS, Options, only_implies_all
from heatline.run import launch

USAGE = """\
heatline [options] script.py [args...]
       heatline [options] -m module [args...]
       heatline run [options] script.py [args...]
       heatline view [--format F] [-o OUT] [--reduced-profile] [--cpu-percent-threshold N]
                     profile.json
       heatline diff [--fail-on-regression PCT] before.json after.json
       heatline check [limits] profile.json
       heatline check [limits] [options] script.py [args...]   (or -m module [args...])
       heatline ctl on|off|status PID
       heatline dump [--json] [--no-pause] PID
       heatline top [--rate HZ] [--once] PID
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
To profile a script named 'run' or 'view', use 'heatline ./view' (or 'heatline run view').
Profile just part of a program by starting with --off and calling heatline.resume() (and
heatline.pause()) in it, or from another shell with 'heatline ctl on PID' (and off)."""


def parser() -> Parser:
    parser = Parser(
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



def prepare(args: list[str]) -> launch.Launch:
    """The program ready to run, the profiler started; a usage error exits."""
    option_args, program = split_argv(args)
    options = parser().parse_args(option_args)
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
    if values["profile_interval_s"] is not None and values["outfile"] is None:
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

