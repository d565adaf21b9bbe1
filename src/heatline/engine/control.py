"""On/off control of a running profile from another process: ``heatline ctl on|off|status PID``.

No signals and no socket: each profiled process has two files in a directory private to the
user (docs/design-live.md, "On/off control"):

- ``PID.cmd``: written by ``heatline ctl`` (a new file renamed over the old one), holding
  ``SEQ on`` or ``SEQ off``; the engine's sampler thread reads it at most every 100 ms
  (control.c) and applies a command once, when SEQ changes, so the program's own
  heatline.pause()/resume() calls are not overridden between commands;
- ``PID.state``: rewritten by the engine with ``SEQ on|off``, the last command applied and
  whether profiling is on now (after the program's own pause()/resume() calls too).

The directory is ``$XDG_RUNTIME_DIR/heatline`` when that is usable, else
``<temp dir>/heatline-UID``, created with mode 0700; one that is not a real directory (a
symlink), not owned by the user, or open to the group or others is refused. Both files are
mode 0600, opened with O_NOFOLLOW; the engine keeps no descriptor open between polls. The
profiled process removes its files when its profile ends (also after Ctrl-C or SIGTERM);
files left by a process that ended otherwise (SIGKILL, a crash) are removed by the next run
or ``heatline ctl``.
"""

from __future__ import annotations

import os
import stat

# typing only for type checkers: a run's path imports none (heatline/__init__.py).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable

# How long `heatline ctl on|off` waits for the engine to apply a command: it polls every
# 100 ms (or at each sample, when the sampling interval is longer), so only a stopped
# (SIGSTOP) or hung process takes this long.
ANSWER_TIMEOUT_S = 10.0


class ControlError(Exception):
    """str() is one line, shown after 'heatline: error: '."""


def _candidates() -> list[str]:
    """Where the control directory may be, most preferred first."""
    found = []
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isabs(runtime):
        found.append(os.path.join(runtime, "heatline"))
    found.append(os.path.join(temp_dir(), f"heatline-{os.geteuid()}"))
    return found


def temp_dir() -> str:
    """tempfile.gettempdir()'s choice on Linux, without importing tempfile (and its imports)
    into the profiled process: $TMPDIR, $TEMP or $TMP when a directory, else /tmp."""
    for name in ("TMPDIR", "TEMP", "TMP"):
        value = os.environ.get(name)
        if value and os.path.isdir(value):
            return os.path.abspath(value)
    return "/tmp"


def _check_private(directory: str) -> None:
    info = os.lstat(directory)
    if not stat.S_ISDIR(info.st_mode):
        raise ControlError(f"refusing control directory '{directory}': not a directory")
    if info.st_uid != os.geteuid():
        raise ControlError(f"refusing control directory '{directory}': owned by another user")
    if info.st_mode & 0o077:
        raise ControlError(
            f"refusing control directory '{directory}': open to other users "
            f"(mode {stat.S_IMODE(info.st_mode):o}, should be 700)"
        )


def _directory(create: bool) -> str | None:
    """The first usable control directory (created when asked), None when there is none."""
    problem = None
    for directory in _candidates():
        parent = os.path.dirname(directory)
        try:
            if create and os.path.isdir(parent):
                try:
                    os.mkdir(directory, 0o700)
                except FileExistsError:
                    pass
            _check_private(directory)
            return directory
        except FileNotFoundError:
            continue
        except OSError as exc:
            problem = problem or ControlError(
                f"can't use control directory '{directory}': {exc.strerror or exc}")
        except ControlError as exc:
            problem = problem or exc
    if problem is not None:
        raise problem
    return None


def private_directory() -> str:
    """The control directory (made if missing; mode 0700, checked): heatline attach keeps its
    lock files and per-attach directories there. Raises ControlError when none is usable."""
    directory = _directory(create=True)
    if directory is None:
        raise ControlError("no directory for heatline's control files: set TMPDIR to a "
                           "writable directory")
    return directory


def _paths(directory: str, pid: int) -> tuple[str, str]:
    return os.path.join(directory, f"{pid}.cmd"), os.path.join(directory, f"{pid}.state")


def _alive(pid: int) -> bool:
    return os.path.exists(f"/proc/{pid}")


def remove_files_of_ended(directory: str, pid_of: Callable[[str], int | None]) -> None:
    """Remove the files in directory that belong to a process that no longer exists:
    ``pid_of(name)`` is the process a file name belongs to, or None for a file of no
    process's."""
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        pid = pid_of(name)
        if pid is not None and not _alive(pid):
            try:
                os.unlink(os.path.join(directory, name))
            except OSError:
                pass


def _control_file_pid(name: str) -> int | None:
    pid, dot, kind = name.partition(".")
    return int(pid) if dot and kind in ("cmd", "state") and pid.isdigit() else None


def _remove_stale(directory: str) -> None:
    """Remove the control files of processes that no longer exist."""
    remove_files_of_ended(directory, _control_file_pid)


def write_private(path: str, text: str) -> None:
    """Create ``path`` (mode 0600, never through a link), replacing a previous file."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                 0o600)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


class Endpoint:
    """The control files of this process while its profile runs."""

    def __init__(self, paused: bool) -> None:
        """Create them; raises ControlError (no usable directory) or OSError."""
        directory = _directory(create=True)
        if directory is None:
            raise ControlError("no directory for the control files")
        _remove_stale(directory)
        self.pid = os.getpid()
        self.command, self.state = _paths(directory, self.pid)
        write_private(self.command, "0 none\n")
        write_private(self.state, f"0 {'off' if paused else 'on'}\n")

    def close(self) -> None:
        """Remove the files (idempotent; only in the process that made them)."""
        if os.getpid() != self.pid:
            return
        for path in (self.command, self.state):
            try:
                os.unlink(path)
            except OSError:
                pass
        self.pid = -1


def _read_state(path: str) -> tuple[int, str] | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if info.st_uid != os.geteuid() or not stat.S_ISREG(info.st_mode):
            return None
        words = os.read(fd, 64).decode("ascii", "replace").split()
    finally:
        os.close(fd)
    if len(words) != 2 or not words[0].isdigit() or words[1] not in ("on", "off"):
        return None  # being rewritten: read again
    return int(words[0]), words[1]


def _find(pid: int) -> tuple[str, str]:
    """The control files of process ``pid``; ControlError when it is not a heatline run."""
    if pid <= 0:
        raise ControlError(f"not a process id: {pid}")
    for directory in _candidates():
        try:
            _check_private(directory)
        except (OSError, ControlError):
            continue
        command, state = _paths(directory, pid)
        if os.path.lexists(state):
            if not _alive(pid):
                _remove_stale(directory)
                raise ControlError(f"process {pid} is not running (it was profiled by "
                                   "heatline; its leftover control files are removed)")
            return command, state
    if not _alive(pid):
        raise ControlError(f"process {pid} is not running")
    raise ControlError(f"process {pid} is not a heatline run of this user "
                       "(no control file for it)")


def status(pid: int) -> str:
    """'on' or 'off': whether process ``pid`` is profiling now."""
    import time

    _, state = _find(pid)
    deadline = time.monotonic() + ANSWER_TIMEOUT_S
    while True:
        found = _read_state(state)
        if found is not None:
            return found[1]
        if time.monotonic() > deadline:
            raise ControlError(f"can't read the state of process {pid}")
        time.sleep(0.01)


def switch(pid: int, on: bool) -> None:
    """Turn profiling of process ``pid`` on or off, and wait until its engine has done so."""
    import time

    command, state = _find(pid)
    current = None
    deadline = time.monotonic() + ANSWER_TIMEOUT_S
    while current is None:
        current = _read_state(state)
        if current is None and time.monotonic() > deadline:
            raise ControlError(f"can't read the state of process {pid}")
        time.sleep(0 if current else 0.01)
    seq = current[0] + 1
    temporary = f"{command}.{os.getpid()}"
    write_private(temporary, f"{seq} {'on' if on else 'off'}\n")
    os.replace(temporary, command)  # the engine never sees half a command
    while True:
        found = _read_state(state)
        if found is not None and found[0] >= seq:
            return
        if not _alive(pid):
            raise ControlError(f"process {pid} ended before it applied the command")
        if time.monotonic() > deadline:
            raise ControlError(f"process {pid} did not apply the command within "
                               f"{ANSWER_TIMEOUT_S:g} s (stopped, or stuck?)")
        time.sleep(0.02)
