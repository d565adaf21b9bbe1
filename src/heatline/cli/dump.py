"""``heatline dump [--json] [--no-pause] [--locals] PID``: every thread's Python stack of a running
process, read from outside it (engine/dump.py), as text or as JSON for tools (the shape is
docs/profile-format.md's "heatline dump's JSON"), made by renderers/dump_text.py."""

from __future__ import annotations

import sys

from heatline.cli import common
from heatline.cli.common import add_option, add_pid, fail, option_default, parse_pid
from heatline.options import DUMP_OPTIONS

# typing only for type checkers, and common.Parser (argparse) only where argparse parses:
# `heatline dump`'s whole run is its start-up.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from heatline.cli.common import Parser


def parser() -> Parser:
    made = common.Parser(
        prog="heatline dump",
        description="Show every thread's Python stack of a running process (file, line, "
        "function; which thread holds the GIL; which wait in a system call), read from outside "
        "it: nothing is loaded into it, so it works on a process that hangs. Needs the "
        "permission a debugger would (the same user, and Yama's ptrace_scope allowing it, or "
        "CAP_SYS_PTRACE).",
        allow_abbrev=False,
    )
    for option in DUMP_OPTIONS:
        add_option(made, option)
    add_pid(made)
    return made


def parse_plainly(args: list[str]) -> dict[str, Any] | None:
    """What ``vars(parser().parse_args(args))`` gives, for a command line of dump's flags and
    one PID (a whole number); None for any other (--help, a misspelling, a second PID...),
    which argparse then parses, and reports. `heatline dump`'s whole run is its start-up, of
    which importing argparse (with re and gettext) and building the parser took about a sixth
    (docs/design-live.md, "heatline dump"); tests/unit/test_dump_start.py holds the two to
    the same answers."""
    flags = {flag: option.dest for option in DUMP_OPTIONS
             if not option.takes_value and not option.negatable for flag in option.flags}
    values: dict[str, Any] = {}
    for option in DUMP_OPTIONS:
        default = option_default(option)
        if isinstance(default, str) and option.parse is not None:
            return None  # argparse would convert a string default: leave that to it
        values[option.dest] = default
    pids = [argument for argument in args if argument not in flags]
    if len(pids) != 1 or not (pids[0].isascii() and pids[0].isdigit()):
        return None
    for argument in args:
        if argument in flags:
            values[flags[argument]] = True
    values["pid"] = pids[0]
    return values


def run(args: list[str]) -> int:
    """Show the stacks; the exit status."""
    from heatline.engine import dump as reader
    from heatline.renderers.dump_text import as_json, as_text

    options = parse_plainly(args)
    if options is None:
        options = vars(parser().parse_args(args))
    pid = parse_pid(options["pid"])
    try:
        result = reader.read(pid, pause=not options["no_pause"], locals=options["locals"])
    except reader.DumpError as exc:
        fail(str(exc), 1)
    if options["json"]:
        import json  # only here: `heatline dump`'s whole run is its start-up

        text = json.dumps(as_json(result), indent=2, ensure_ascii=False) + "\n"
    else:
        text = as_text(result)
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:  # the reader left (`| head`): no traceback, nothing more to write
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return 0
