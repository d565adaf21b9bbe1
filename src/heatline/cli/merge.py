"""``heatline merge A.json B.json ... -o all.json``: the profiles of several runs (on several
machines, or one) joined into one profile, read as one job (data/runs.py)."""

from __future__ import annotations

from heatline.cli.common import Parser, add_option, check_outfile, fail
from heatline.options import MERGE_OPTIONS


def _merge_parser() -> Parser:
    parser = Parser(
        prog="heatline merge",
        description="Join profiles written with -o by several runs (the nodes of one job, or "
        "runs on one machine) into one profile: clocks aligned by each profile's start time, "
        "processes kept apart by host and pid.",
        allow_abbrev=False,
    )
    for option in MERGE_OPTIONS:
        add_option(parser, option)
    parser.add_argument("profiles", metavar="profile.json", nargs="+",
                        help="the profiles to merge, two or more")
    return parser


def run(args: list[str]) -> int:
    """Merge and write; the exit status."""
    from heatline import data as profile
    from heatline.data.runs import MergeError, merge_runs

    options = _merge_parser().parse_args(args)
    if options.outfile is None:
        fail("merge needs -o FILE: where to write the merged profile")
    if len(options.profiles) < 2:
        fail(f"merge needs two or more profiles, not {len(options.profiles)}")
    outfile = check_outfile(options.outfile)
    try:
        named = [(path, profile.load(path)) for path in options.profiles]
        merged = merge_runs(named)
    except (profile.ProfileError, MergeError) as exc:
        fail(str(exc), 1)
    try:
        profile.dump(merged, outfile)
    except OSError as exc:
        fail(f"can't write the profile to '{outfile}': {exc.strerror or exc}", 1)
    return 0
