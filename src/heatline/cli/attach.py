"""``heatline attach PID [run options] [--duration S] [-o FILE]``: profile a running Python
process from now on, for S seconds or until Ctrl-C, then detach and write the report (stdout)
and -o, as ``heatline script.py`` does at the end of a run.

This side parses the arguments, and reports: the attach itself, the engine loaded into the
process and the handshake with it through the attach's private directory, is engine/attach.py's
(the target's side is run/attached.py); the profile it hands back is merged with the children's
(run/collect.py), written (-o) and printed. docs/design-live.md, "heatline attach"."""

from __future__ import annotations

import errno
import os
import sys
from typing import TYPE_CHECKING, Any

from heatline.cli.common import (Parser, add_format_shortcuts, add_option, add_pid,
                                  check_outfile, fail, parse_pid)
from heatline.options import ATTACH_OPTIONS, RUN_OPTIONS, Options, only_implies_all

if TYPE_CHECKING:
    from heatline.engine.attach import Detached


def _parser() -> Parser:
    parser = Parser(
        prog="heatline attach",
        usage="heatline attach PID [options] [--duration DURATION] [-o FILE]",
        description="Profile a running Python program from now on: heatline's engine is loaded "
        "into it (CPU per line and per thread, memory allocated from now on), and after "
        "--duration or at Ctrl-C it is detached (the program goes on as before) and the report "
        "is printed, or written with -o. The program must run the Python version this heatline "
        "runs on; attaching needs the permission a debugger would (the same user, and Yama's "
        "ptrace_scope allowing it, or CAP_SYS_PTRACE).",
        allow_abbrev=False,
    )
    for option in RUN_OPTIONS + ATTACH_OPTIONS:
        add_option(parser, option)
    add_format_shortcuts(parser)
    add_pid(parser)
    return parser


def run(args: list[str]) -> int:
    from heatline.engine import attach

    values = vars(_parser().parse_args(args))
    pid_text, duration = values.pop("pid"), values.pop("duration")
    pid = parse_pid(pid_text)
    if values["outfile"] is None and values["format"] in ("html", "json"):
        values["outfile"] = f"profile.{values['format']}"
    if values["write_interval_s"] is not None:
        fail("--write-interval is not available with heatline attach (use --duration)")
    only_implies_all(values)
    options = Options(**values)
    if options.outfile is not None:
        options.outfile = check_outfile(options.outfile)
    if pid == os.getpid():
        fail("heatline attach can't attach to itself")
    try:
        version = attach.check_target(pid)
        base = attach.control_directory()
        with attach.Lock(base, pid):
            return attach.attach_and_profile(pid, version, base, options, duration, _say,
                                             lambda detached: _finish(detached, pid, options))
    except attach.AttachError as exc:
        fail(str(exc), 1)
    except KeyboardInterrupt:
        # Before the profile started: the attach's directory is gone, so a profile the
        # agent's thread still starts is stopped again at once (the engine watches for that:
        # detach.h).
        fail(f"interrupted before profiling began; process {pid} goes on as before", 130)


def _say(message: str) -> None:
    sys.stderr.write(f"heatline: {message}\n")
    sys.stderr.flush()


def _finish(detached: Detached, pid: int, options: Options) -> int:
    """The report of an attach: its profile with its children's, how long the attach and the
    detach took, written and printed."""
    profile = _with_children(detached, pid, options)
    profile["attached"]["attach_s"] = round(detached.attach_s, 6)
    if not detached.ended:
        profile["attached"]["detach_s"] = round(detached.detach_s, 6)
    if profile["attached"].get("ended_by") == "exit":
        _say(f"process {pid} exited while attached; its profile up to the exit:")
    else:
        _say(f"detached from process {pid} in {detached.detach_s * 1e3:.0f} ms")
    return _report(profile, options)


def _with_children(detached: Detached, pid: int, options: Options) -> dict[str, Any]:
    """The attached process's profile merged with those of the children it started while
    attached (DIR/children: run/collect.py's merge_attached), as a run merges its children."""
    from heatline.run import collect

    profile, process = detached.profile, detached.process
    epoch = process.get("start_epoch")
    if not isinstance(epoch, (int, float)):
        return profile
    ended_by = profile["attached"].get("ended_by")
    main = {"pid": pid, "ppid": process.get("ppid", 0), "role": "main",
            "argv": list(profile["argv"]), "exit": "detached" if ended_by == "detach" else "exit"}
    merged = collect.merge_attached(profile, detached.children, main, epoch)
    if merged is not profile and options.use_virtual_time:  # the children's too
        from heatline.data.virtual_time import running_time_only

        running_time_only(merged)
    return merged


def _report(profile: dict[str, Any], options: Options) -> int:
    from heatline.renderers import View, render_to
    from heatline.renderers.terminal import print_report

    if options.outfile:
        try:
            render_to(profile, options.format, options.outfile, View.of(options))
        except OSError as exc:
            reason = exc.strerror or errno.errorcode.get(exc.errno or 0, str(exc))
            fail(f"can't write the profile to '{options.outfile}': {reason}", 1)
    if not options.quiet:
        print_report(profile, sys.stdout, View.of(options))
        sys.stdout.flush()
    return 0
