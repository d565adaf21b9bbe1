"""``heatline view profile.json``: show a saved profile again, in any format."""

from __future__ import annotations

import sys

from heatline.cli.common import Parser, add_format_shortcuts, add_option, check_outfile, fail
from heatline.options import RUN_OPTIONS, VIEW_OPTIONS


def _view_parser() -> Parser:
    parser = Parser(
        prog="heatline view", description="Show a profile written with -o.", allow_abbrev=False
    )
    for option in RUN_OPTIONS:
        if option.view:
            add_option(parser, option)
    add_format_shortcuts(parser)
    for option in VIEW_OPTIONS:
        add_option(parser, option)
    parser.add_argument("profile", metavar="profile.json", help="the profile to show")
    return parser



def run(args: list[str]) -> int:
    """Show the profile; the exit status."""
    from heatline import data as profile

    options = _view_parser().parse_args(args)
    try:
        data = profile.load(options.profile)
    except profile.ProfileError as exc:
        fail(str(exc), 1)
    if options.pid is not None:
        from heatline.data.merge import process_view
        from heatline.data.queries import process_keys

        try:
            data = process_view(data, options.pid)
        except KeyError:
            pids = ", ".join(process_keys(data.get("processes", []))) or "none"
            fail(f"'{options.profile}' has no process {options.pid} (processes: {pids})", 1)
        except LookupError as exc:
            fail(f"'{options.profile}': {exc}", 1)
    from heatline.renderers import View, render_bytes, render_to

    view = View.of(options)
    if options.outfile is not None:
        render_to(data, options.format, check_outfile(options.outfile), view)
        return 0
    fmt = options.format or "terminal"
    if fmt == "terminal":
        from heatline.renderers.terminal import print_report

        print_report(data, sys.stdout, view)
        return 0
    sys.stdout.flush()
    sys.stdout.buffer.write(render_bytes(data, fmt, view))
    sys.stdout.buffer.flush()
    return 0

