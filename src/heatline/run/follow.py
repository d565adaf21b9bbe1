"""Following child processes: the hooks that carry the profiler into a fork child or an exec'd
Python child (carrier.py says how), and a profiled child's own session, whose raw snapshot is
written into the run directory whichever way the child ends (collect.py merges them).
On a child's start path: imports nothing beyond the interpreter's start-up and heatline's own
start path (no typing, re, json)."""

from __future__ import annotations

import _thread
import os
import sys
import time

from heatline.run import carrier as carriers
from heatline.run.carrier import Carrier
from heatline.run.output import one_line
from heatline.run.sigterm import SigtermGuard, terminating

# typing only for type checkers: a run's path imports none (heatline/__init__.py).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def install(carrier: Carrier) -> None:
    """The hooks that follow this process's children with ``carrier``: in the main process
    after carrier.enable(), once the program's SIGTERM guard is installed (the fork hook must
    run after the guard's, in a child); in an exec'd child, as it starts. With --no-children
    only the exec wrappers: the main process's own exec still hands the run over or ends it
    (handover.py)."""
    carriers.adopt(carrier)
    if hasattr(os, "register_at_fork") and carrier.config.get("children", True):
        from heatline.engine import session

        os.register_at_fork(after_in_child=lambda: _after_fork_in_child(carrier))
        session.keep_hooks_in_fork_children()  # each fork child profiles with them
    carriers.wrap_exec(carrier)


# heatline attach: the carrier the attached process's forks are followed with while attached
# (None before and after); its fork hook is registered once per process and stays (a hook
# cannot be unregistered), doing nothing once this is None.
_attached_carrier: Carrier | None = None
_attached_hook = False


class _AttachedMain:
    """The attached process's place in its carrier (Carrier.main): an exec of the process
    itself is neither handed over nor followed (the attach ends with the process it attached
    to), its children's are."""

    def __init__(self) -> None:
        self.pid = os.getpid()


def _exec_unchanged(carrier: Carrier, path: Any, argv: Any, env: Any) -> tuple[Any, Any]:
    return env, _nothing


def _nothing() -> None:
    pass


def follow_attached(directory: str, session_arguments: dict[str, Any],
                    start_epoch: float) -> Carrier:
    """heatline attach (run/attached.py), in the attached process once its profile runs:
    follow the children it starts from now on as a run follows them (a fork child's session,
    the exec wrappers for Python children), each writing its profile into ``directory``
    (the attacher merges them: collect.merge_attached), until :func:`unfollow_attached`.
    The program's os.environ and C environment are not touched: only the environment of
    the exec of a followed Python child gets heatline's variables."""
    global _attached_carrier, _attached_hook
    from heatline.engine import session

    config = {"dir": directory, "session": session_arguments, "root": carriers.IMPORT_ROOT,
              "hook": carriers.HOOK_DIR, "start_epoch": start_epoch, "children": True,
              "attach": True}
    carrier = Carrier(config)
    carrier.main, carrier.main_exec = _AttachedMain(), _exec_unchanged
    carriers.adopt(carrier)
    if hasattr(os, "register_at_fork") and not _attached_hook:
        os.register_at_fork(after_in_child=_after_fork_while_attached)
        _attached_hook = True
    session.keep_hooks_in_fork_children()
    _attached_carrier = carrier
    carriers.wrap_exec(carrier, loaded=True)
    return carrier


def unfollow_attached(carrier: Carrier) -> None:
    """The attach's end (its stop, or the program's exit): children started from now on are
    not followed; the exec functions are the program's own again, and a fork child releases
    the memory hooks it inherits, as before the attach. Children followed already go on
    (a child still running writes its profile only if the attach's directory is still there
    when it ends)."""
    global _attached_carrier
    from heatline.engine import session

    _attached_carrier = None
    carriers.unwrap_exec(carrier)
    session.keep_hooks_in_fork_children(False)
    if carriers.current() is carrier:
        carriers.adopt(None)


def _after_fork_while_attached() -> None:
    carrier = _attached_carrier
    if carrier is not None:
        _after_fork_in_child(carrier)


def _after_fork_in_child(carrier: Carrier) -> None:
    if carrier.ended():
        # An attach's child forking after the detach (a Pool worker, a fork server): not
        # followed, and without the memory hooks it inherited, as under python.
        from heatline.engine import session

        session.release_after_fork()
        return
    if carrier.guard is not None:  # the parent child's: the child gets its own
        carrier.guard.in_child()
        carrier.guard = None
    if _thread.get_ident() in carrier.exec_forks:
        # subprocess's child, which only runs the program's preexec_fn and execs (the thread
        # that forked it is this one, the child's only thread): the exec'd program is
        # followed if it is Python; a session here would leave a profile never written.
        return
    try:
        start_child(carrier, "fork child", os.getppid(), gpu=0, fork_stack=_fork_stack())
    except Exception:  # noqa: BLE001 -- the child must run even if heatline cannot follow
        pass


def _fork_stack() -> list[tuple[str, str, int]]:
    """The frames a fork child inherited from its parent, outermost first, down to the one
    that called fork: (file, function name, line) each. They stay suspended at those lines
    while the child runs below them (a Pool worker's loop runs under the parent's
    ``with Pool(...)`` line and ends with os._exit): data/build.py tells the child's own
    work from its time under them (``release_inherited``)."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename == __file__:  # this module's hooks
        frame = frame.f_back
    stack = []
    while frame is not None:
        stack.append((frame.f_code.co_filename, frame.f_code.co_name, frame.f_lineno))
        frame = frame.f_back
    stack.reverse()
    return stack


def start_spawned(config: dict[str, Any]) -> None:
    """Called by heatline/run/_child/sitecustomize.py in an exec'd Python child."""
    carrier = Carrier(config)
    if config.get("tables") is not None:
        from heatline.engine import session

        session.adopt_tables(config["tables"])
    install(carrier)
    if config.get("role") == "forkserver":
        return  # it only forks the workers, which profile themselves; it lives past the run
    # parent 0: a process of a command (run/command.py), whose parent heatline did not start.
    start_child(carrier, config.get("role", "python subprocess"),
                config.get("parent") or os.getppid(), gpu=None)


def start_child(carrier: Carrier, role: str, ppid: int, gpu: int | None,
                fork_stack: list[tuple[str, str, int]] | None = None) -> None:
    """Start a fresh session in this (child) process and arrange for its profile to be
    written into the run directory whichever way the process ends. ``fork_stack``: a fork
    child's inherited frames (_fork_stack), written with its profile."""
    import atexit

    from heatline.engine import session as session_module

    arguments = dict(carrier.config["session"])
    arguments["control"] = False  # `heatline ctl PID` acts on the main process only
    if gpu is not None:
        arguments["gpu"] = gpu  # CUPTI and NVML state does not survive fork()
    previous = carrier.finisher
    if previous is not None:
        previous.session.stopped_by_fork()  # the parent's: the engine's fork handler stopped it
    token = f"{os.getpid()}-{time.monotonic_ns():x}"
    directory = carrier.config["dir"]
    if arguments.get("steps") is not None:
        # a step window (--steps): followed from the parent's window file too (a DataLoader
        # worker marks no steps), through a state file of its own
        state = os.path.join(directory, token + ".window-state")
        try:
            from heatline.engine.control import write_private

            write_private(state, "0 off\n")
            arguments["follow"] = (os.path.join(directory, f"{ppid}.window"), state)
        except OSError:
            pass
    session = session_module.Session(program=program_label(), argv=list(sys.argv), **arguments)
    session.announce_window(os.path.join(directory, f"{os.getpid()}.window"))
    finisher = ChildFinisher(carrier, session, role, ppid, token)
    if fork_stack:
        finisher.fork_stack = fork_stack
    session.start()
    carrier.finisher = finisher
    _touch(os.path.join(carrier.config["dir"], token + ".started"))
    # The status it exits with is known only after its atexit handlers: the engine appends it
    # to the profile then (collect.py reads it).
    session_module.record_exit_status(os.path.join(carrier.config["dir"], token + ".prof"))
    atexit.register(finisher)
    _wrap_exit(carrier, finisher)
    carrier.guard = SigtermGuard(finisher)
    carrier.guard.install(at_fork=False)  # the carrier's fork hook disarms it in a child
    if carrier.config.get("attach"):
        # A child of heatline attach still running when the attacher has its profile and
        # removes the attach's directory: nothing could take its profile any more, and it
        # stops profiling then (its sampler sees the directory gone), as the attached
        # process did at the detach.
        session_module.watch_removal(carrier.config["dir"], finisher)


def program_label() -> str:
    """What a profile's header names as the program: the script's absolute path, else
    argv[0] (-c, -m) or the interpreter."""
    argv0 = sys.argv[0] if sys.argv else ""
    if argv0 and argv0 not in ("-c", "-m") and os.path.exists(argv0):
        return os.path.abspath(argv0)
    return argv0 or sys.executable


def _wrap_exit(carrier: Carrier, finisher: ChildFinisher) -> None:
    real_exit = carrier.real.setdefault("_exit", os._exit)

    def _exit(status: Any) -> Any:
        # A status os._exit refuses (it raises) leaves the child running, and profiled.
        if finisher.pid == os.getpid() and isinstance(status, int) and -(2**31) <= status < 2**31:
            finisher.exit = f"os._exit({status})"
            finisher()
        return real_exit(status)

    os._exit = _exit


def _touch(path: str) -> None:
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600))
    except OSError:
        pass  # the run directory is gone (the main process ended first): nothing to report to


class ChildFinisher:
    """Stops a child's session and writes its raw snapshot, once, from whichever exit path
    comes first (atexit, os._exit, SIGTERM, exec). Never raises."""

    def __init__(self, carrier: Carrier, session: Any, role: str, ppid: int, token: str) -> None:
        self.carrier = carrier
        self.session = session
        self.role = role
        self.ppid = ppid
        self.token = token
        self.pid = os.getpid()
        self.succeeded = True  # what SigtermGuard sets
        self.exit = "exit"
        self.fork_stack: list[tuple[str, str, int]] = []  # a fork child's inherited frames

    def __call__(self) -> None:
        if os.getpid() != self.pid:
            return
        # A SIGTERM while writing (pool.terminate() racing a worker's own exit) waits until
        # the profile is written: the guard's handler then kills the process as before. It is
        # blocked before the finisher is marked as run: the guard's handler, run between the
        # two, would find it marked, write nothing and kill the process.
        blocked = _block_sigterm()
        if os.getpid() != self.pid:  # the handler ran meanwhile, and wrote
            _unblock(blocked)
            return
        self.pid = -1  # once
        try:
            if terminating() or not self.succeeded and self.exit == "exit":
                self.exit = "SIGTERM"
            elif self.exit == "exit" and isinstance(getattr(sys, "last_value", None),
                                                    KeyboardInterrupt):
                # The interpreter printed an uncaught KeyboardInterrupt (PyErr_Print sets
                # sys.last_value) and kills itself with SIGINT after its atexit handlers.
                self.exit = "SIGINT"
            self._write()
        except BaseException as exc:  # noqa: BLE001 -- a profiler failure never changes the child
            self._record_failure(exc)
        finally:
            _unblock(blocked)

    def _record_failure(self, exc: BaseException) -> None:
        """What went wrong, one line in <token>.failed, for the main process to report."""
        try:
            text = one_line(exc)[:300]
            path = os.path.join(self.carrier.config["dir"], self.token + ".failed")
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
            try:
                os.write(fd, text.encode("utf-8", "replace"))
            finally:
                os.close(fd)
        except BaseException:  # noqa: BLE001 -- the report then says only that it is missing
            pass

    def _write(self) -> None:
        session = self.session
        session.stop()
        snapshot = session.raw_snapshot()  # first: it gives session.start_epoch exactly
        write_profile(self.carrier.config["dir"], self.token, session, {
            "pid": os.getpid(),
            "ppid": self.ppid,
            "role": _refine_role(self.role),
            "exit": self.exit,
            "start_epoch": session.start_epoch,  # its timelines' time 0, as the main's
            "fork_stack": self.fork_stack,
            "snapshot": snapshot,
        })


def write_profile(directory: str, token: str, session: Any, info: dict[str, Any]) -> None:
    """Write a stopped session's raw profile (marshal) into the run directory as
    <token>.prof, whole or not at all; ``info`` has pid, ppid, role, exit, start_epoch and
    the raw snapshot (collect.py reads them). It is written into the <token>.started file
    the child made as it started, which is then renamed: no file is made at the end (on ext4
    each new file is a new inode: 61 us of CPU per empty file on this project's machine, and
    a child made two more, this one's and its exit status's). A process without one (the main
    process's part before an exec) writes a file of its own."""
    import marshal

    payload = {
        "program": session.program,
        "argv": [str(a) for a in session.argv],
        "started_at": session.started_at,
        "elapsed_s": session.elapsed_s,
        "cpu_s": session.cpu_s,
        "sampling_interval_s": session.sampling_interval_s,
        **info,
    }
    written = os.path.join(directory, token + ".started")
    try:
        fd = os.open(written, os.O_WRONLY | os.O_TRUNC | os.O_CLOEXEC | os.O_NOFOLLOW)
    except FileNotFoundError:
        written = os.path.join(directory, token + ".tmp")
        fd = os.open(written, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    with open(fd, "wb") as f:
        marshal.dump(payload, f)
    os.replace(written, os.path.join(directory, token + ".prof"))


def _block_sigterm() -> Any:
    try:
        import _signal

        return _signal.pthread_sigmask(_signal.SIG_BLOCK, {_signal.SIGTERM})
    except (ImportError, AttributeError, OSError, ValueError):
        return None


def _unblock(previous: Any) -> None:
    if previous is not None:
        import _signal

        _signal.pthread_sigmask(_signal.SIG_SETMASK, previous)


def _refine_role(role: str) -> str:
    """A multiprocessing child's role from its process name and target, read as its profile
    is written. That may be at any point of the child's life: in the middle of importing
    multiprocessing.process (os._exit, SIGTERM or an exec there; a fork child of a thread that
    was importing it keeps it half imported for good) or while modules are torn down. So the
    module's state is only read, never its code run (current_process() fails with NameError
    or AttributeError in a half-imported module), a module whose import has not completed is
    not read at all, and any failure leaves the role as started: a label never costs the
    profile."""
    if role not in ("fork child", "spawned process"):
        return role
    try:
        return _multiprocessing_role(role)
    except Exception:  # noqa: BLE001 -- the role as started is still true
        return role


def _multiprocessing_role(role: str) -> str:
    process = _imported("multiprocessing.process")
    current = None if process is None else vars(process).get("_current_process")
    name = getattr(current, "_name", None)  # what current_process().name returns
    if not isinstance(name, str) or name == "MainProcess":
        return role
    if "PoolWorker" in name:
        return "Pool worker"
    # A torch DataLoader's workers are plain multiprocessing processes running its worker
    # loop (the parent deletes a process's target once started; the child keeps its copy).
    target = vars(current).get("_target")
    if (getattr(target, "__module__", None) == "torch.utils.data._utils.worker"
            and getattr(target, "__name__", None) == "_worker_loop"):
        return "DataLoader worker"
    if _imported("concurrent.futures.process") is not None:
        return "ProcessPoolExecutor worker"
    return f"multiprocessing process ({name})"


def _imported(name: str) -> Any:
    """sys.modules[name] once its import has completed, else None (not imported, or its
    import still running or cut short: importlib marks the spec meanwhile)."""
    module = sys.modules.get(name)
    spec = getattr(module, "__spec__", None)
    if module is None or getattr(spec, "_initializing", False):
        return None
    return module
