"""``heatline attach``'s ways into another process: on CPython 3.14+ the interpreter's own,
PEP 768's ``sys.remote_exec`` (the attach's code run by the program's main thread at its next
safe point), where the program allows it; and the agent library (_native/agent.c, built as
heatline/_agent*.so) loaded into it and called by _native.inject (inject.c), on every version,
where remote_exec is refused or does not run soon. Also what can be checked before touching
it: that it is a CPython this heatline's engine can load into (read from outside, as heatline
dump reads it), and why the kernel refused when it did. And the attacher's side of the
handshake with the target's (run/attached.py), through the attach's private directory
(:func:`attach_and_profile`); cli/attach.py parses the arguments and reports.
docs/design-live.md, "heatline attach"."""

from __future__ import annotations

import glob
import json
import os
import sys
import time
from typing import TYPE_CHECKING, Any, NamedTuple

from heatline.engine import dump
from heatline.engine.switching import QUICK_SWITCH_US

if TYPE_CHECKING:
    from collections.abc import Callable

    from heatline.options import Options

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


# ---- the attacher's side of the handshake --------------------------------------------------
# Everything between heatline attach and run/attached.py (the target's side) goes through files
# in the attach's private directory (mode 0700, in heatline's control directory): the request,
# then the target's answers (run/attached.py lists them). This side makes the directory, lets
# heatline in (remote_exec or the agent), waits for the start, asks for the stop, waits for
# the profile, reads it, and removes the directory.

START_TIMEOUT_S = 30.0  # for the target's agent thread to get the GIL and start the profile
STOP_TIMEOUT_S = 60.0  # for the target to stop the profile and write it
THREAD_END_TIMEOUT_S = 10.0  # for heatline's threads to end once the profile is written
POLL_S = 0.02
# Options the target does not get: what the attacher does with the profile.
_ATTACHER_ONLY = ("outfile", "format", "quiet", "reduced_profile", "threshold_pct")


def control_directory() -> str:
    """heatline's private control directory, where the attach's directory and lock go."""
    from heatline.engine import control

    try:
        return control.private_directory()
    except control.ControlError as exc:
        raise AttachError(str(exc)) from None


class Lock:
    """DIR/attach-PID.lock, created exclusively: one heatline attach per process at a time.
    A lock whose owner no longer runs is taken over."""

    def __init__(self, base: str, pid: int) -> None:
        self.path = os.path.join(base, f"attach-{pid}.lock")
        self.pid = pid

    def __enter__(self) -> Lock:
        for _ in range(3):
            try:
                fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                             | os.O_CLOEXEC, 0o600)
            except FileExistsError:
                owner = _read_int(self.path)
                if owner is not None and owner != os.getpid() and _alive(owner):
                    raise AttachError(f"process {self.pid} is being attached to already, by "
                                      f"heatline attach (process {owner})") from None
                try:
                    os.unlink(self.path)  # its owner is gone
                except FileNotFoundError:
                    pass
                continue
            with os.fdopen(fd, "w") as file:
                file.write(str(os.getpid()))
            return self
        raise AttachError(f"can't take the attach lock {self.path}")

    def __exit__(self, *exc_info: Any) -> None:
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass


def _way_in(method: str, why_not: str) -> str:
    """How the attach came in, for its first line: through sys.remote_exec, or the agent and
    why not remote_exec (3.14+)."""
    if method == "remote_exec":
        return "through sys.remote_exec (PEP 768)"
    return "through heatline's agent (ptrace)" + (f"; not sys.remote_exec: {why_not}"
                                                   if why_not else "")


def _read_text(directory: str, name: str) -> str:
    try:
        with open(os.path.join(directory, name), encoding="utf-8") as file:
            return file.read()
    except OSError:
        return ""


def _read_int(path: str) -> int | None:
    try:
        with open(path, encoding="utf-8") as file:
            return int(file.read().strip() or "x")
    except (OSError, ValueError):
        return None


def _alive(pid: int) -> bool:
    """Whether process pid runs (a zombie does not)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as file:
            state = file.read().rpartition(")")[2].split()[:1]
    except OSError:
        return False
    return state not in (["Z"], ["X"])


def _make_directory(base: str, pid: int, options: Options, switch_interval_us: int | None) -> str:
    import shutil

    directory = os.path.join(base, f"attach-{pid}-{os.urandom(6).hex()}")
    os.mkdir(directory, 0o700)
    target_uid = os.stat(f"/proc/{pid}").st_uid
    if target_uid != os.geteuid():
        # root attaching to another user's process: the directory must be the target's, and
        # reachable by it (the control directory is root's own, mode 0700): in the temp
        # directory, made 0700 and given to that user.
        shutil.rmtree(directory)
        import tempfile

        directory = os.path.join(tempfile.gettempdir(), f"heatline-attach-{pid}-"
                                 f"{os.urandom(6).hex()}")
        os.mkdir(directory, 0o700)
        os.chown(directory, target_uid, -1)
    # Where the children the program starts while attached write their profiles (run/
    # follow.py's follow_attached): made here, so that it goes with the directory.
    os.mkdir(os.path.join(directory, "children"), 0o700)
    if target_uid != os.geteuid():
        os.chown(os.path.join(directory, "children"), target_uid, -1)
    sent = {k: v for k, v in vars(options).items() if k not in _ATTACHER_ONLY}
    _write(directory, "root", install_root())
    _write(directory, "request", json.dumps({"options": sent,
                                             "switch_interval_us": switch_interval_us}))
    if target_uid != os.geteuid():
        for name in ("root", "request"):
            os.chown(os.path.join(directory, name), target_uid, -1)
    return directory


def _write(directory: str, name: str, text: str) -> None:
    with open(os.path.join(directory, name), "w", encoding="utf-8") as file:
        file.write(text)


def _read_json(directory: str, name: str) -> dict[str, Any]:
    """DIR/name's JSON object; {} when it is missing or not one."""
    try:
        with open(os.path.join(directory, name), encoding="utf-8") as file:
            found = json.load(file)
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def _heatline_tids(directory: str) -> list[int]:
    """The target's threads that were heatline's: the agent's (DIR/started), the one that
    stopped the profile (DIR/stopping), the --pprof-server's (DIR/process)."""
    tids = [_read_json(directory, "started").get("agent_tid"),
            _read_json(directory, "stopping").get("tid"),
            *(_read_json(directory, "process").get("heatline_tids") or [])]
    return [tid for tid in tids if isinstance(tid, int)]


def _wait_threads_gone(pid: int, tids: list[int], timeout_s: float) -> None:
    """After the detach: until heatline's threads in the target have ended (the stopping one
    writes the profile, then returns), so that the command returns when the process has only
    its own threads again."""
    deadline = time.monotonic() + timeout_s
    while (any(os.path.exists(f"/proc/{pid}/task/{tid}") for tid in tids)
           and time.monotonic() < deadline):
        time.sleep(POLL_S / 4)


def _wait_for(directory: str, names: tuple[str, ...], pid: int, timeout_s: float) -> str | None:
    """The first of names to appear in directory; None if the process ends or time runs out
    first (a file written just before it ended still counts)."""
    deadline = time.monotonic() + timeout_s
    while True:
        for name in names:
            if os.path.exists(os.path.join(directory, name)):
                return name
        if not _alive(pid) or time.monotonic() >= deadline:
            for name in names:
                if os.path.exists(os.path.join(directory, name)):
                    return name
            return None
        time.sleep(POLL_S)


_STEPS = {"thread": "started", "no-python": "found no Python C API and ended",
          "waiting-gil": "waiting for the GIL", "gil": "holding the GIL, starting the profile",
          "done": "done, without an answer"}


def _progress(pid: int, directory: str) -> str:
    """How far the agent's thread came (DIR/progress, agent.c) and what the kernel says it is
    doing now: for the one-line error of an attach that got no answer."""
    try:
        with open(os.path.join(directory, "progress"), encoding="utf-8") as file:
            tid_text, _, step = file.read().strip().partition(" ")
        tid = int(tid_text)
    except (OSError, ValueError):
        return "heatline's thread never ran"
    said = f"heatline's thread {tid}: {_STEPS.get(step, step)}"
    try:
        with open(f"/proc/{pid}/task/{tid}/stat", encoding="utf-8") as file:
            state = file.read().rpartition(")")[2].split()[0]
        with open(f"/proc/{pid}/task/{tid}/syscall", encoding="utf-8") as file:
            call = file.read().split()[0]
    except (OSError, IndexError):
        return said + ", ended"
    return said + f", state {state}, system call {call}"


def _error_text(directory: str) -> str:
    try:
        with open(os.path.join(directory, "error"), encoding="utf-8") as file:
            return file.read().strip()
    except OSError:
        return "unknown error"


def attach_and_profile(pid: int, version: str, base: str, options: Options,
                       duration: float | None, say: Callable[[str], None],
                       finish: Callable[[Detached], int]) -> int:
    """Attach to process pid (Python ``version``, checked by check_target), with ``base`` the
    control directory (held under Lock), profile it for ``duration`` seconds (None: until
    Ctrl-C) or until it ends, detach, and return ``finish(Detached(...))``, called while the
    attach's directory (the children's profiles) is still there; the directory is removed
    after, in every case. ``say`` gets the lines for the user on the way (attached, the
    pprof server). Raises AttachError."""
    import shutil
    import signal

    # Shorter GIL switches while heatline's thread starts, and again while it stops (engine/
    # switching.py's QUICK_SWITCH_US); that side puts the program's back once done, and so does
    # this one, in every case (an error, Ctrl-C).
    switching = quicken_switching(pid)
    try:
        directory = _make_directory(base, pid, options, switching)
    except BaseException:
        restore_switching(pid, switching)
        raise
    try:
        begun = time.monotonic()
        try:
            # CPython 3.14+: the interpreter's own way in first; the agent too when it is
            # refused, or the main thread takes too long to reach a safe point.
            sent, why_not = remote_exec(pid, base, directory)
            if sent and _wait_for(directory, ("claimed",), pid,
                                  REMOTE_EXEC_WAIT_S) is None:
                why_not = (f"its main thread reached no safe point within "
                           f"{REMOTE_EXEC_WAIT_S:g} s")
                sent = False
            if not sent:
                inject(pid, directory)
            got = _wait_for(directory, ("started", "error"), pid, START_TIMEOUT_S)
        finally:
            restore_switching(pid, switching)
        if got == "error":
            raise AttachError(f"process {pid}: {_error_text(directory)}")
        if got is None:
            if not _alive(pid):
                raise AttachError(f"process {pid} exited while heatline attached to it")
            raise AttachError(
                f"process {pid} did not start profiling within {START_TIMEOUT_S:.0f} s "
                f"({_progress(pid, directory)}; a thread holding the GIL in a long C call "
                "keeps heatline's from taking it); heatline dump PID shows what its threads do")
        attach_s = time.monotonic() - begun
        until = f"for {duration:g} s" if duration is not None else "until Ctrl-C"
        method = _read_text(directory, "claimed")
        if method == "remote_exec":
            forget_remote_exec(base, pid)
        say(f"attached to process {pid} (Python {version}) in {attach_s * 1e3:.0f} ms "
             f"{_way_in(method, why_not)}; profiling {until}")
        url = _read_json(directory, "started").get("pprof_url")
        if url:  # the server runs in the target, whose stderr is the program's
            say(f"pprof server on {url}")
        ended = _profile(pid, directory, duration)
        detach_begun = time.monotonic()
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # the detach must finish
        try:
            switching = None if ended else quicken_switching(pid)
            if not ended:
                _write(directory, "stop", "")
            got = _wait_for(directory, ("profile.json", "error"), pid, STOP_TIMEOUT_S)
        finally:
            signal.signal(signal.SIGINT, previous)
            restore_switching(pid, switching)
        if got == "profile.json" and not ended:
            _wait_threads_gone(pid, _heatline_tids(directory), THREAD_END_TIMEOUT_S)
        detach_s = time.monotonic() - detach_begun
        if got == "error":
            raise AttachError(f"process {pid}: {_error_text(directory)}")
        if got is None:
            if not _alive(pid):
                raise AttachError(
                    f"process {pid} exited while attached, without writing its profile (it "
                    "was killed, or left through os._exit): nothing to report")
            raise AttachError(f"process {pid} did not write its profile within "
                                     f"{STOP_TIMEOUT_S:.0f} s of the stop")
        return finish(Detached(_load(directory), _read_json(directory, "process"),
                               os.path.join(directory, "children"), attach_s, detach_s, ended))
    finally:
        shutil.rmtree(directory, ignore_errors=True)


class Detached(NamedTuple):
    """What an attach leaves for the attacher to report (attach_and_profile's ``finish``)."""

    profile: dict[str, Any]  # DIR/profile.json, the attached process's own
    process: dict[str, Any]  # DIR/process (run/attached.py): start_epoch, ppid, heatline_tids
    children: str  # DIR/children: the profiles of the children it started while attached
    attach_s: float  # from the first try at getting in to the profile's start
    detach_s: float  # from the stop asked (or the process's end) to the profile written
    ended: bool  # the process ended, or stopped the profile itself, before the stop was asked


def _profile(pid: int, directory: str, duration: float | None) -> bool:
    """Wait for the duration, Ctrl-C or the process's end; True when it ended (its profile is
    then written at its exit, or not at all)."""
    deadline = None if duration is None else time.monotonic() + duration
    try:
        while deadline is None or time.monotonic() < deadline:
            if not _alive(pid) or os.path.exists(os.path.join(directory, "profile.json")):
                return True
            left = POLL_S if deadline is None else min(POLL_S, deadline - time.monotonic())
            time.sleep(max(left, 0.0))
    except KeyboardInterrupt:
        pass
    return False


def _load(directory: str) -> dict[str, Any]:
    from heatline.data import io

    return io.load(os.path.join(directory, "profile.json"))
