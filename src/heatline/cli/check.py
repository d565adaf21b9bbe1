"""``heatline check [limits] profile.json`` or ``heatline check [limits] [options] script.py``:
a profile, or the run of a program, against a budget (data/budget.py), for CI."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from heatline.cli.common import VALUE_OPTIONS, Parser, add_format_shortcuts, add_option
from heatline.cli.common import check_outfile, fail, option_sets, split_argv
from heatline.options import CHECK_OPTIONS, RUN_OPTIONS

# Options of `heatline check` that check itself uses in a run: the limits, and where (and in
# which format) to keep the profile; the other run options go to the profiled run.
_KEEP_OPTIONS = ("-o", "--outfile", "--format", "--html", "--json")


_CHECK_VALUES, _CHECK_SHORTS = option_sets(CHECK_OPTIONS + RUN_OPTIONS)


def run(args: list[str]) -> int:
    """Check a profile or a run against limits; the exit status (0 within budget, 1 over, 2
    bad input; a failed program's own status)."""
    from heatline import data as profile
    from heatline.data import budget as check

    option_args, program = split_argv(args, _CHECK_VALUES, _CHECK_SHORTS)
    if program[:1] and program[0].endswith(".json"):
        # A profile, not a program: the limits may come after it (heatline check p.json --no-leaks)
        option_args, program = option_args + program[1:], program[:1]
    parser = Parser(
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
        add_option(parser, option)
    add_format_shortcuts(parser)
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
    return run_and_check(run_args, program, budget, keep, options.format,
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
        takes_value = arg in VALUE_OPTIONS  # (--opt=value carries its own)
        kept.extend(option_args[i : i + 2] if takes_value else [arg])
        i += 2 if takes_value else 1
    return kept


def _report_check(data: dict, budget: object, stream: object) -> int:
    from heatline.data import budget as check

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



def run_and_check(run_args: list[str], program: list[str], budget: Any, keep: str | None,
                  keep_format: str | None, report: Any) -> int:
    """``heatline check [limits] [options] script.py args``: profile the program in a child
    ``heatline`` (its stdin, stdout and stderr are the program's), then check the profile;
    ``report(profile, stream)`` writes the verdict and returns 0 or 1.

    The exit status: the program's when it failed (non-zero, or 128+N when signal N killed it;
    the verdict is still written), else the verdict's. So a CI step fails when either does."""
    import signal
    import subprocess
    import tempfile

    from heatline import data as profiles

    with tempfile.TemporaryDirectory(prefix="heatline-check-") as directory:
        path = os.path.join(directory, "profile.json")
        # `run`: after it, "--" only ends heatline's options (the program may start with "-").
        command = [sys.executable, "-m", "heatline", "run", *run_args, "-o", path,
                   "--format", "json", "--", *program]
        # Ctrl-C reaches the child too (same process group): it finishes its profile and
        # ends; this process waits for it rather than dying first. SIGTERM is passed on.
        child = subprocess.Popen(command)
        previous_int = signal.signal(signal.SIGINT, signal.SIG_IGN)
        previous_term = signal.signal(signal.SIGTERM, lambda *_: child.terminate())
        try:
            status = child.wait()
        finally:
            signal.signal(signal.SIGINT, previous_int)
            signal.signal(signal.SIGTERM, previous_term)
        status = 128 - status if status < 0 else status
        try:
            data = profiles.load(path)
        except profiles.ProfileError:
            sys.stderr.write(f"heatline: error: the run wrote no profile (exit status {status})"
                             "\n")
            return status or 2
        verdict = report(data, sys.stderr)
        if keep:
            from heatline.renderers import format_for_path, render_to

            render_to(data, keep_format or format_for_path(keep), keep)
    return status or verdict

