"""``heatline attach``'s ways into another process: on CPython 3.14+ the interpreter's own,
PEP 768's ``sys.remote_exec`` (the attach's code run by the program's main thread at its next
safe point), where the program allows it; and the agent library (_native/agent.c, built as
heatline/_agent*.so) loaded into it and called by _native.inject (inject.c), on every version,
where remote_exec is refused or does not run soon. Also what can be checked before touching
it: that it is a CPython this heatline's engine can load into (read from outside, as heatline
dump reads it), and why the kernel refused when it did. docs/design.md, "heatline attach"."""

from __future__ import annotations

import glob
import os
import sys
from typing import Any

from heatline.engine import dump
from heatline.engine.switching import QUICK_SWITCH_US

AGENT_FUNCTION = "heatline_agent_attach"
AGENT_CODE = "heatline_agent_code"
INJECT_TIMEOUT_S = 10.0
# How long the program's main thread has to run a sys.remote_exec script before the agent is
# loaded as well (the first of the two to run takes the attach): a main thread blocked in a
# long call (a sleep, a join, a C call) reaches no safe point meanwhile.
REMOTE_EXEC_WAIT_S = 0.25


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


def agent_code() -> str:
    """The Python code the agent runs in the target (agent.c's heatline_agent_code): the
    attacher reads it from the library, so the two ways in run the same code."""
    import ctypes

    library = ctypes.CDLL(agent_path())
    start = ctypes.c_char.in_dll(library, AGENT_CODE)
    return ctypes.string_at(ctypes.addressof(start)).decode("utf-8")


def remote_exec(pid: int, base: str, directory: str) -> tuple[bool, str]:
    """Hand the attach in ``directory`` to process pid through PEP 768 (CPython 3.14+):
    (True, "") once sent, else (False, why not; "" before 3.14). The script is the agent's
    code, in ``base`` (the attacher's control directory), one file a process
    (remote_exec_script), removed once it has run (forget_remote_exec) and kept while it may
    still run: when the agent took the attach first, the main thread runs it later (it then
    finds the attach over and does nothing), and the interpreter reports a script it cannot
    open on the program's stderr. Kept files of processes that ended are removed here."""
    from heatline.engine import control

    send = getattr(sys, "remote_exec", None)
    if send is None:
        return False, ""
    try:
        if os.stat(f"/proc/{pid}").st_uid != os.geteuid():
            return False, "the target runs as another user, who could not read the script"
        control.remove_files_of_ended(base, _remote_exec_pid)
        script = remote_exec_script(base, pid)
        names = {"directory": directory, "action": "start", "method": "remote_exec"}
        text = (f"exec(compile({agent_code()!r}, '<heatline attach>', 'exec'), "
                f"{{'__builtins__': __builtins__, **{names!r}}})\n")
        temporary = f"{script}.{os.getpid()}.tmp"
        with open(temporary, "w", encoding="utf-8") as file:
            file.write(text)
        os.replace(temporary, script)  # whole: a pending call of an earlier attach may read it
    except OSError as exc:  # the process gone, the control directory unwritable: the agent
        return False, f"its script could not be written ({exc.strerror or exc})"
    try:
        send(pid, script)
    except Exception as exc:  # noqa: BLE001 -- any refusal: the agent is the way in then
        return False, _remote_exec_refusal(pid, exc)
    return True, ""


def remote_exec_script(base: str, pid: int) -> str:
    return os.path.join(base, f"remote-exec-{pid}.py")


def forget_remote_exec(base: str, pid: int) -> None:
    """Remove process pid's remote_exec script: the attach came in through it, so it ran."""
    try:
        os.unlink(remote_exec_script(base, pid))
    except FileNotFoundError:
        pass


def _remote_exec_refusal(pid: int, exc: Exception) -> str:
    """Why process pid refused sys.remote_exec, in the user's terms where they are known."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as file:
            environment = file.read().split(b"\0")
        with open(f"/proc/{pid}/cmdline", "rb") as file:
            arguments = file.read().split(b"\0")
    except OSError:
        environment = arguments = []
    setting = b"PYTHON_DISABLE_REMOTE_DEBUG="
    if any(entry.startswith(setting) and entry != setting for entry in environment):
        return "PYTHON_DISABLE_REMOTE_DEBUG is set in it"
    if b"disable-remote-debug" in arguments or b"-Xdisable-remote-debug" in arguments:
        return "it runs with -X disable-remote-debug"
    return " ".join(str(exc).split()) or type(exc).__name__


def _remote_exec_pid(name: str) -> int | None:
    """The process a remote_exec script is for (remote_exec_script), from its file name."""
    pid = name.removeprefix("remote-exec-").removesuffix(".py")
    return int(pid) if name.startswith("remote-exec-") and pid.isdigit() else None


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
