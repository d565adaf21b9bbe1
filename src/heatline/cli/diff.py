"""``heatline diff before.json after.json``: two profiles compared (data/diff.py)."""

from __future__ import annotations

import sys

from heatline.cli.common import Parser, add_option, fail
from heatline.options import DIFF_OPTIONS

def run(args: list[str]) -> int:
    """Compare; the exit status (1: a regression over --fail-on-regression)."""
    from heatline import data as profile
    from heatline.data import diff

    parser = Parser(prog="heatline diff", description="Compare two profiles written with -o.",
                     allow_abbrev=False)
    for option in DIFF_OPTIONS:
        add_option(parser, option)
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

