"""``heatline attach``'s way into another process: the agent library (_native/agent.c, built
as heatline/_agent*.so) loaded into it and called by _native.inject (inject.c), and what can
be checked before touching it: that it is a CPython this heatline's engine can load into (read
from outside, as heatline dump reads it), and why the kernel refused when it did.
docs/design.md, "heatline attach"."""

from __future__ import annotations

import glob
import os
import sys
from typing import Any

from heatline.engine import dump
from heatline.engine.switching import QUICK_SWITCH_US

AGENT_FUNCTION = "heatline_agent_attach"
INJECT_TIMEOUT_S = 10.0


class AttachError(Exception):
    """str() is one line, shown after 'heatline: error: '."""


def agent_path() -> str:
    """The agent library's path, as the target will open it (links resolved)."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    found = sorted(glob.glob(os.path.join(here, "_agent*.so")))
    if not found:
        raise AttachError(f"heatline's attach agent (_agent*.so) is missing from {here}; "
                          "reinstall heatline")
    return os.path.realpath(found[0])


def install_root() -> str:
    """The directory to put on the target's sys.path to import this heatline."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def check_target(pid: int) -> str:
    """The target's Python version ("3.11.7"), if heatline can load its engine into it; else
    AttachError (no such process, not Python, another version, refused)."""
    try:
        found = dump.read(pid, pause=False)
    except dump.DumpError as exc:
        message = str(exc).replace("heatline dump", "heatline attach")
        raise AttachError(message) from None
    version = found.version
    parts = version.split(".")
    mine = f"{sys.version_info[0]}.{sys.version_info[1]}"
    if ".".join(parts[:2]) != mine:
        raise AttachError(
            f"process {pid} runs Python {version} and this heatline runs on Python {mine}: "
            f"attach with the heatline installed for Python {'.'.join(parts[:2])} (its engine "
            "is built for one Python version and must be loaded by the same)")
    return version


def watch_for_detach(directory: str, callback: Any) -> None:
    """In the attached process, with its profile running: the engine's sampler calls
    ``callback()`` once, on a short-lived thread, when DIRECTORY/stop appears or
    DIRECTORY/request is gone (detach.h). Cleared by the profile's stop."""
    from heatline import _native

    _native._watch_detach(os.path.join(directory, "stop"), os.path.join(directory, "request"),
                          callback)


def quicken_switching(pid: int) -> int | None:
    """Shorten process pid's switch interval to QUICK_SWITCH_US from outside, while heatline's
    thread starts or stops the profile there (engine/switching.py says why; remote.c,
    hl_remote_switch_interval), and return the one it had, or None when it could not be read
    or written (the attach goes on)."""
    from heatline import _native

    previous = _native.switch_interval(pid, QUICK_SWITCH_US, 0)
    return None if previous == QUICK_SWITCH_US else previous


def restore_switching(pid: int, previous: int | None) -> None:
    """Put back the interval quicken_switching returned, unless the target's own code (or
    the attach's side in it) has set one since."""
    from heatline import _native

    if previous is not None:
        _native.switch_interval(pid, previous, QUICK_SWITCH_US)


def inject(pid: int, directory: str) -> dict[str, object]:
    """Load the agent into process pid and start its thread for the attach in directory.
    Returns _native.inject's result (tid, loaded, held_ns); raises AttachError."""
    from heatline import _native

    if sys.platform != "linux" or os.uname().machine != "x86_64":
        raise AttachError("heatline attach runs on Linux x86_64 only")
    result = _native.inject(pid, agent_path(), AGENT_FUNCTION, directory, INJECT_TIMEOUT_S)
    error = result["error"]
    if error is None:
        if result["value"] != 0:
            raise AttachError(f"the agent could not start its thread in process {pid} "
                              f"({os.strerror(-int(result['value']))})")
        return result
    if error == "refused":
        message = dump.refusal_message(pid, int(result["os_error"]))
        raise AttachError(message.replace("heatline dump", "heatline attach")
                          .replace("not allowed to read", "not allowed to attach to"))
    if error == "no-process":
        raise AttachError(f"no process {pid}" if "no process" in result["message"]
                          else f"process {pid} exited while heatline attached to it")
    raise AttachError(f"can't attach to process {pid}: {result['message']}")
