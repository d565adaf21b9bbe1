"""``heatline dump [--json] [--no-pause] [--locals] PID``: every thread's Python stack of a running
process, read from outside it (engine/dump.py), as text or as JSON for tools (the shape is
docs/profile-format.md's "heatline dump's JSON"), made by renderers/dump_text.py."""

from __future__ import annotations

import json
import sys

from heatline.cli.common import Parser, add_option, add_pid, fail, parse_pid
from heatline.options import DUMP_OPTIONS

def _parser() -> Parser:
    parser = Parser(
        prog="heatline dump",
        description="Show every thread's Python stack of a running process (file, line, "
        "function; which thread holds the GIL; which wait in a system call), read from outside "
        "it: nothing is loaded into it, so it works on a process that hangs. Needs the "
        "permission a debugger would (the same user, and Yama's ptrace_scope allowing it, or "
        "CAP_SYS_PTRACE).",
        allow_abbrev=False,
    )
    for option in DUMP_OPTIONS:
        add_option(parser, option)
    add_pid(parser)
    return parser


def run(args: list[str]) -> int:
    """Show the stacks; the exit status."""
    from heatline.engine import dump as reader
    from heatline.renderers.dump_text import as_json, as_text

    options = _parser().parse_args(args)
    pid = parse_pid(options.pid)
    try:
        result = reader.read(pid, pause=not options.no_pause, locals=options.locals)
    except reader.DumpError as exc:
        fail(str(exc), 1)
    if options.json:
        sys.stdout.write(json.dumps(as_json(result), indent=2, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(as_text(result))
    sys.stdout.flush()
    return 0
