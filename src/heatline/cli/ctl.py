"""``heatline ctl on|off|status PID``: turn the profiling of a running heatline process on or
off from another shell (engine/control.py's files; no signal is sent)."""

from __future__ import annotations

import sys

from heatline.cli.common import Parser, fail

def run(args: list[str]) -> int:
    """Act on the process; the exit status."""
    from heatline.engine import control

    parser = Parser(
        prog="heatline ctl",
        description="Turn the profiling of a running 'heatline' process on or off (start it "
        "with --off to profile only what you choose), or show whether it is on. Only your own "
        "processes can be controlled; no signal is sent.",
        allow_abbrev=False,
    )
    parser.add_argument("action", choices=("on", "off", "status"))
    parser.add_argument("pid", metavar="PID", type=int, help="the process id of the heatline run")
    options = parser.parse_args(args)
    try:
        if options.action == "status":
            state = control.status(options.pid)
        else:
            control.switch(options.pid, options.action == "on")
            state = options.action
    except control.ControlError as exc:
        fail(str(exc), 1)
    except OSError as exc:
        fail(f"can't control process {options.pid}: {exc.strerror or exc}", 1)
    sys.stdout.write(f"{options.pid}: profiling {state}\n")
    return 0

