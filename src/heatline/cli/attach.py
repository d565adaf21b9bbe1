"""``heatline attach PID [run options] [--duration S] [-o FILE]``: profile a running Python
process from now on, for S seconds or until Ctrl-C, then detach and write the report (stdout)
and -o, as ``heatline script.py`` does at the end of a run.

The engine is loaded into the process (engine/attach.py: the agent library and ptrace; the
target's side is run/attached.py); this side prepares a private directory for the attach
(mode 0700, in heatline's control directory: the request, then the target's answers), waits,
asks for the stop, reads the profile the target wrote there, renders it, and removes the
directory. docs/design.md, "heatline attach"."""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import sys
import time
from typing import Any

from heatline.cli.common import (Parser, add_format_shortcuts, add_option, add_pid,
                                  check_outfile, fail, parse_pid)
from heatline.options import ATTACH_OPTIONS, RUN_OPTIONS, Options, only_implies_all

START_TIMEOUT_S = 30.0  # for the target's agent thread to get the GIL and start the profile
STOP_TIMEOUT_S = 60.0  # for the target to stop the profile and write it
THREAD_END_TIMEOUT_S = 10.0  # for heatline's threads to end once the profile is written
POLL_S = 0.02
# Options the target does not get: what the attacher does with the profile.
_ATTACHER_ONLY = ("outfile", "format", "quiet", "reduced_profile", "threshold_pct")


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
        base = _control_directory()
        with _Lock(base, pid):
            return _attach(pid, version, base, options, duration)
    except attach.AttachError as exc:
        fail(str(exc), 1)
    except KeyboardInterrupt:
        # Before the profile started: the attach's directory is gone, so a profile the
        # agent's thread still starts is stopped again at once (the engine watches for that:
        # detach.h).
        fail(f"interrupted before profiling began; process {pid} goes on as before", 130)


def _control_directory() -> str:
    from heatline.engine import attach, control

    try:
        return control.private_directory()
    except control.ControlError as exc:
        raise attach.AttachError(str(exc)) from None


class _Lock:
    """DIR/attach-PID.lock, created exclusively: one heatline attach per process at a time.
    A lock whose owner no longer runs is taken over."""

    def __init__(self, base: str, pid: int) -> None:
        self.path = os.path.join(base, f"attach-{pid}.lock")
        self.pid = pid

    def __enter__(self) -> _Lock:
        from heatline.engine.attach import AttachError

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
    from heatline.engine import attach

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
    _write(directory, "root", attach.install_root())
    _write(directory, "request", json.dumps({"options": sent,
                                             "switch_interval_us": switch_interval_us}))
    if target_uid != os.geteuid():
        for name in ("root", "request"):
            os.chown(os.path.join(directory, name), target_uid, -1)
    return directory


def _write(directory: str, name: str, text: str) -> None:
    with open(os.path.join(directory, name), "w", encoding="utf-8") as file:
        file.write(text)


def _say(message: str) -> None:
    sys.stderr.write(f"heatline: {message}\n")
    sys.stderr.flush()


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


def _attach(pid: int, version: str, base: str, options: Options, duration: float | None) -> int:
    from heatline.engine import attach

    # Shorter GIL switches while heatline's thread starts, and again while it stops (engine/
    # switching.py's QUICK_SWITCH_US); that side puts the program's back once done, and so does
    # this one, in every case (an error, Ctrl-C).
    switching = attach.quicken_switching(pid)
    try:
        directory = _make_directory(base, pid, options, switching)
    except BaseException:
        attach.restore_switching(pid, switching)
        raise
    try:
        begun = time.monotonic()
        try:
            # CPython 3.14+: the interpreter's own way in first; the agent too when it is
            # refused, or the main thread takes too long to reach a safe point.
            sent, why_not = attach.remote_exec(pid, base, directory)
            if sent and _wait_for(directory, ("claimed",), pid,
                                  attach.REMOTE_EXEC_WAIT_S) is None:
                why_not = (f"its main thread reached no safe point within "
                           f"{attach.REMOTE_EXEC_WAIT_S:g} s")
                sent = False
            if not sent:
                attach.inject(pid, directory)
            got = _wait_for(directory, ("started", "error"), pid, START_TIMEOUT_S)
        finally:
            attach.restore_switching(pid, switching)
        if got == "error":
            raise attach.AttachError(f"process {pid}: {_error_text(directory)}")
        if got is None:
            if not _alive(pid):
                raise attach.AttachError(f"process {pid} exited while heatline attached to it")
            raise attach.AttachError(
                f"process {pid} did not start profiling within {START_TIMEOUT_S:.0f} s "
                f"({_progress(pid, directory)}; a thread holding the GIL in a long C call "
                "keeps heatline's from taking it); heatline dump PID shows what its threads do")
        attach_s = time.monotonic() - begun
        until = f"for {duration:g} s" if duration is not None else "until Ctrl-C"
        method = _read_text(directory, "claimed")
        if method == "remote_exec":
            attach.forget_remote_exec(base, pid)
        _say(f"attached to process {pid} (Python {version}) in {attach_s * 1e3:.0f} ms "
             f"{_way_in(method, why_not)}; profiling {until}")
        url = _read_json(directory, "started").get("pprof_url")
        if url:  # the server runs in the target, whose stderr is the program's
            _say(f"pprof server on {url}")
        ended = _profile(pid, directory, duration)
        detach_begun = time.monotonic()
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # the detach must finish
        try:
            switching = None if ended else attach.quicken_switching(pid)
            if not ended:
                _write(directory, "stop", "")
            got = _wait_for(directory, ("profile.json", "error"), pid, STOP_TIMEOUT_S)
        finally:
            signal.signal(signal.SIGINT, previous)
            attach.restore_switching(pid, switching)
        if got == "profile.json" and not ended:
            _wait_threads_gone(pid, _heatline_tids(directory), THREAD_END_TIMEOUT_S)
        detach_s = time.monotonic() - detach_begun
        if got == "error":
            raise attach.AttachError(f"process {pid}: {_error_text(directory)}")
        if got is None:
            if not _alive(pid):
                raise attach.AttachError(
                    f"process {pid} exited while attached, without writing its profile (it "
                    "was killed, or left through os._exit): nothing to report")
            raise attach.AttachError(f"process {pid} did not write its profile within "
                                     f"{STOP_TIMEOUT_S:.0f} s of the stop")
        profile = _with_children(_load(directory), directory, pid, options)
        profile["attached"]["attach_s"] = round(attach_s, 6)
        if not ended:
            profile["attached"]["detach_s"] = round(detach_s, 6)
        if profile["attached"].get("ended_by") == "exit":
            _say(f"process {pid} exited while attached; its profile up to the exit:")
        else:
            _say(f"detached from process {pid} in {detach_s * 1e3:.0f} ms")
        return _report(profile, options)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


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


def _with_children(profile: dict[str, Any], directory: str, pid: int,
                   options: Options) -> dict[str, Any]:
    """The attached process's profile merged with those of the children it started while
    attached (DIR/children: run/collect.py's merge_attached), as a run merges its children."""
    from heatline.run import collect

    process = _read_json(directory, "process")
    epoch = process.get("start_epoch")
    if not isinstance(epoch, (int, float)):
        return profile
    ended_by = profile["attached"].get("ended_by")
    main = {"pid": pid, "ppid": process.get("ppid", 0), "role": "main",
            "argv": list(profile["argv"]), "exit": "detached" if ended_by == "detach" else "exit"}
    merged = collect.merge_attached(profile, os.path.join(directory, "children"), main, epoch)
    if merged is not profile and options.use_virtual_time:  # the children's too
        from heatline.data.virtual_time import running_time_only

        running_time_only(merged)
    return merged


def _load(directory: str) -> dict[str, Any]:
    from heatline.data import io

    return io.load(os.path.join(directory, "profile.json"))


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
