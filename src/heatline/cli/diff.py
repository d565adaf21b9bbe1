"""``heatline diff before.json after.json``: two profiles compared (data/diff.py)."""

from __future__ import annotations

import argparse
import sys

from heatline.cli.common import Parser, fail

def _growth(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a percentage of 0 or more, not {text!r}")
    return value


def run(args: list[str]) -> int:
    """Compare; the exit status (1: a regression over --fail-on-regression)."""
    from heatline import data as profile
    from heatline.data import diff

    parser = Parser(prog="heatline diff", description="Compare two profiles written with -o.",
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

