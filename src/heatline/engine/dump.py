"""``heatline dump PID``'s reading of another process: every thread's Python stack from the C
engine's remote reader (_native.dump: remote.c), and what the kernel says of each thread
(/proc/PID/task/TID: its state, the system call it waits in). Nothing is loaded into the
process and none of its code runs (docs/design-live.md, "heatline dump").

The kernel allows the reading where it would allow a debugger to attach; when it refuses,
:func:`refusal_message` says why (Yama's ptrace_scope, another user, a missing CAP_SYS_PTRACE)
and what to do.
"""

from __future__ import annotations

import errno
import os

from heatline.engine.records import dataclass, field

from heatline.engine import deadlock
from heatline.engine.deadlock import Deadlock

# System calls a thread is commonly found waiting in, by number: x86_64's numbers
# (arch/x86/entry/syscalls/syscall_64.tbl, fixed by the kernel's ABI). Elsewhere the number
# is shown as it is.
_X86_64_SYSCALLS = {
    0: "read", 1: "write", 7: "poll", 16: "ioctl", 17: "pread64", 18: "pwrite64", 19: "readv",
    20: "writev", 23: "select", 24: "sched_yield", 34: "pause", 35: "nanosleep", 42: "connect",
    43: "accept", 44: "sendto", 45: "recvfrom", 46: "sendmsg", 47: "recvmsg", 61: "wait4",
    65: "semop", 70: "msgrcv", 73: "flock", 74: "fsync", 75: "fdatasync",
    128: "rt_sigtimedwait", 130: "rt_sigsuspend", 202: "futex", 208: "io_getevents",
    220: "semtimedop", 230: "clock_nanosleep", 232: "epoll_wait", 243: "mq_timedreceive",
    247: "waitid", 257: "openat", 270: "pselect6", 271: "ppoll", 281: "epoll_pwait",
    288: "accept4", 299: "recvmmsg", 426: "io_uring_enter", 441: "epoll_pwait2",
    449: "futex_waitv",
}

# futex's number, whose first argument is the word a thread waits on (deadlock.py's lock waits).
_FUTEX = {"x86_64": 202, "aarch64": 98}

# /proc/PID/stat's state letters, as words.
_STATES = {
    "R": "running", "S": "sleeping", "D": "in uninterruptible sleep", "T": "stopped",
    "t": "stopped by a debugger", "Z": "a zombie", "X": "dead", "I": "idle", "P": "parked",
}

_CAP_SYS_PTRACE = 19  # linux/capability.h


class DumpError(Exception):
    """str() is one line, shown after 'heatline: error: '. kind: no-process, refused,
    not-python, unsupported, unreadable, no-memory (remote.h's errors)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class Frame:
    file: str
    name: str
    qualname: str
    line: int
    # With locals read: its bound local variables as (name, short repr), in the code's order
    # (remoteobj.h: the repr is read from outside, never made by the target); else None
    locals: tuple[tuple[str, str], ...] | None = None


@dataclass
class Thread:
    native_id: int  # the kernel's thread id (0: not known)
    name: str = ""  # the kernel's name for it (/proc/.../comm)
    python_name: str | None = None  # the name threading gave it (None: not a threading.Thread)
    kernel_state: str = ""  # /proc's letter: R, S, D...
    syscall: str | None = None  # the system call it waits in, when it waits in one
    wchan: str | None = None  # the kernel function it sleeps in
    python: bool = False  # it has a Python thread state (else: a thread of C code only)
    thread_id: int | None = None  # threading.get_ident() in the process
    interpreter: int | None = None
    main: bool = False
    holds_gil: bool = False
    stopped: bool = False  # stopped while its stack was read
    complete: bool = True  # False: the stack was torn (changed while read)
    truncated: bool = False
    frames: list[Frame] = field(default_factory=list)  # innermost first
    futex: int | None = None  # in futex: the word it waits on (its first argument)
    locks: list[dict] = field(default_factory=list)  # lock objects its frames hold (locks.h)

    @property
    def state(self) -> str:
        """running, idle (asleep, in a system call when `syscall` says which), or /proc's
        word for anything else."""
        if self.kernel_state == "R":
            return "running"
        if self.kernel_state in ("S", "D", "I"):
            return "idle"
        return _STATES.get(self.kernel_state, "unknown")


@dataclass
class Dump:
    pid: int
    command: list[str]
    version: str  # "3.11.7"; "3.9" when only major.minor are known
    binary: str  # the file the interpreter was found in
    paused: bool  # the threads were stopped while read
    pause_note: str  # when they were not all stopped: why
    pause_s: float  # how long they were stopped
    read_s: float  # how long reading the interpreter's state took
    threads_complete: bool  # False: a thread list was torn (threads starting or ending)
    threads: list[Thread]
    deadlock: Deadlock | None = None  # threads waiting for each other's locks (deadlock.py)


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as file:
            return file.read()
    except OSError:
        return None


def syscall_name(number: int, machine: str | None = None) -> str:
    """The system call's name on this machine (os.uname()'s machine unless given)."""
    if (machine or os.uname().machine) == "x86_64" and number in _X86_64_SYSCALLS:
        return _X86_64_SYSCALLS[number]
    return f"system call {number}"


def _task(pid: int, tid: int) -> Thread:
    """What /proc says of one thread (read before the threads are stopped, which changes it)."""
    base = f"/proc/{pid}/task/{tid}"
    thread = Thread(native_id=tid)
    thread.name = (_read(f"{base}/comm") or "").rstrip("\n")
    stat = _read(f"{base}/stat") or ""
    # "TID (comm) S ...": the name may hold spaces and parentheses, the state follows the last ')'
    after = stat.rpartition(")")[2].split()
    thread.kernel_state = after[0] if after else ""
    wchan = (_read(f"{base}/wchan") or "").strip()
    thread.wchan = wchan if wchan and wchan != "0" else None
    syscall = (_read(f"{base}/syscall") or "").split()
    if thread.kernel_state != "R" and syscall and syscall[0] not in ("running", "-1"):
        try:
            thread.syscall = syscall_name(int(syscall[0]))
            if int(syscall[0]) == _FUTEX.get(os.uname().machine) and len(syscall) > 1:
                thread.futex = int(syscall[1], 16)
        except ValueError:
            pass
    return thread


def _tasks(pid: int) -> dict[int, Thread]:
    try:
        names = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return {}
    return {int(name): _task(pid, int(name)) for name in names if name.isdigit()}


def version_text(number: int, exact: bool) -> str:
    """A PY_VERSION_HEX as text: "3.11.7", or "3.9" when only major.minor are known."""
    major, minor, micro = number >> 24, (number >> 16) & 0xFF, (number >> 8) & 0xFF
    if not exact:
        return f"{major}.{minor}"
    level, serial = (number >> 4) & 0xF, number & 0xF
    suffix = {0xA: "a", 0xB: "b", 0xC: "rc"}.get(level)
    return f"{major}.{minor}.{micro}" + (f"{suffix}{serial}" if suffix else "")


def check_process(pid: int) -> None:
    """Raises DumpError when there is no process pid (or only its zombie)."""
    if pid <= 0:
        raise DumpError("no-process", f"no process {pid}")
    stat = _read(f"/proc/{pid}/stat")
    if stat is None:
        raise DumpError("no-process", f"no process {pid}")
    if stat.rpartition(")")[2].split()[:1] == ["Z"]:
        raise DumpError("no-process", f"process {pid} has exited (a zombie its parent has not "
                        "waited for)")


def read(pid: int, *, pause: bool = True, locals: bool = False) -> Dump:
    """Every thread of process pid: its Python stack, whether it holds the GIL, what it waits
    in, the name threading gave it. With pause, the threads are stopped while their stacks are
    read (a few hundred microseconds to a few milliseconds), so the stacks are consistent. With
    locals, each frame's local variables too. Raises DumpError."""
    from heatline import _native

    check_process(pid)
    tasks = _tasks(pid)
    raw = _native.dump(pid, pause, locals)
    if raw["error"] is not None:
        raise error_of(pid, raw)
    threads = []
    for entry in raw["threads"]:
        thread = tasks.pop(entry["native_id"], None) or Thread(native_id=entry["native_id"])
        thread.python = True
        thread.thread_id = entry["thread_id"]
        thread.interpreter = entry["interpreter"]
        thread.main = entry["main"]
        thread.holds_gil = entry["holds_gil"]
        thread.stopped = entry["stopped"]
        thread.complete = entry["complete"]
        thread.truncated = entry["truncated"]
        thread.python_name = entry["python_name"]
        if locals:
            by_frame: list[list[tuple[str, str]]] = [[] for _ in entry["frames"]]
            for index, name, value in entry["locals"]:
                by_frame[index].append((name, value))
            thread.frames = [Frame(*frame, tuple(variables))
                             for frame, variables in zip(entry["frames"], by_frame)]
        else:
            thread.frames = [Frame(*frame) for frame in entry["frames"]]
        thread.locks = entry["locks"]
        threads.append(thread)
    # Python's list runs newest first; the main thread first, then the others as they started.
    threads.sort(key=lambda t: (not t.main, t.native_id or 1 << 62))
    threads.extend(sorted(tasks.values(), key=lambda t: t.native_id))  # threads of C code only
    command = (_read(f"/proc/{pid}/cmdline") or "").split("\0")
    return Dump(
        pid=pid,
        command=[part for part in command if part] if command != [""] else [],
        version=version_text(raw["version"], raw["version_exact"]),
        binary=raw["binary"],
        paused=raw["paused"],
        pause_note=raw["pause_note"],
        pause_s=raw["pause_ns"] / 1e9,
        read_s=raw["read_ns"] / 1e9,
        threads_complete=raw["threads_complete"],
        threads=threads,
        deadlock=deadlock.find(threads),
    )


def error_of(pid: int, raw: dict, command: str = "heatline dump") -> DumpError:
    """The DumpError of a failed reading (_native.dump's or remote_open's dict)."""
    message = raw["message"]
    if raw["error"] == "refused":
        message = refusal_message(pid, raw["os_error"], command=command)
    return DumpError(raw["error"], message)


# ---- when the kernel refuses ------------------------------------------------------------------


def _yama_scope() -> int | None:
    text = _read("/proc/sys/kernel/yama/ptrace_scope")
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def _can_ptrace_any() -> bool:
    """Whether this process has CAP_SYS_PTRACE in its effective set."""
    for line in (_read("/proc/self/status") or "").splitlines():
        if line.startswith("CapEff:"):
            return bool(int(line.split()[1], 16) >> _CAP_SYS_PTRACE & 1)
    return False


def _uid_of(pid: int) -> int | None:
    for line in (_read(f"/proc/{pid}/status") or "").splitlines():
        if line.startswith("Uid:"):
            return int(line.split()[1])  # the real uid, which the kernel compares
    return None


def refusal_message(pid: int, os_error: int, *, yama: int | None = -1,
                    target_uid: int | None = -1, uid: int | None = None,
                    can_ptrace: bool | None = None, command: str = "heatline dump") -> str:
    """One line: the kernel refused to let heatline read process pid (os_error: EPERM, EACCES,
    ENOSYS), why, and what to do; command names the reader (heatline dump, heatline top). The
    facts are looked up unless given (tests give them)."""
    yama = _yama_scope() if yama == -1 else yama
    target_uid = _uid_of(pid) if target_uid == -1 else target_uid
    uid = os.getuid() if uid is None else uid
    can_ptrace = _can_ptrace_any() if can_ptrace is None else can_ptrace
    head = f"not allowed to read process {pid} ({os.strerror(os_error)})"
    if uid == 0:
        capability = ("give heatline CAP_SYS_PTRACE, which it runs without (a container: docker "
                      "run --cap-add SYS_PTRACE; Kubernetes: securityContext.capabilities.add: "
                      "[SYS_PTRACE])")
    else:
        capability = (f"run {command} as root (sudo), or with CAP_SYS_PTRACE (in a container: "
                      "docker run --cap-add SYS_PTRACE; Kubernetes: "
                      "securityContext.capabilities.add: [SYS_PTRACE])")
    if os_error == errno.ENOSYS:
        return (f"can't read process {pid}: this kernel or sandbox has no process_vm_readv "
                f"(gVisor lacks it), which {command} needs")
    if yama == 3:
        return (f"{head}: Yama's ptrace_scope is 3 (/proc/sys/kernel/yama/ptrace_scope), which "
                "forbids reading another process to everyone until the next reboot")
    if target_uid is not None and target_uid != uid and not can_ptrace:
        return (f"{head}: it runs as user {target_uid} and heatline as user {uid}; run {command} "
                f"as user {target_uid}, or {capability}")
    if yama == 2 and not can_ptrace:
        return (f"{head}: Yama's ptrace_scope is 2 (/proc/sys/kernel/yama/ptrace_scope): only a "
                f"process with CAP_SYS_PTRACE may read another; {capability}")
    if yama == 1 and not can_ptrace:
        return (f"{head}: Yama's ptrace_scope is 1 (/proc/sys/kernel/yama/ptrace_scope): a "
                f"process may be read only by its ancestors ({command} is not one); "
                f"{capability}, or let the program allow it (it calls "
                "prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY)), or allow it system-wide (sudo "
                "sysctl kernel.yama.ptrace_scope=0)")
    if not can_ptrace:
        return (f"{head}: the process has privileges heatline lacks (it changed user or "
                f"capabilities, or made itself not dumpable); {capability}")
    return (f"{head}: refused although heatline has CAP_SYS_PTRACE (a seccomp filter or a "
            "security module such as SELinux, AppArmor or Landlock may forbid it)")
