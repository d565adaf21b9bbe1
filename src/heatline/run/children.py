"""Child processes: carrying the profiler into every Python child the program starts, and
collecting what they saw (docs/design.md, "Child processes").

- **fork** (``os.fork``, multiprocessing's fork start method, the fork server's children): an
  ``os.register_at_fork(after_in_child=...)`` hook starts a fresh engine in the child (the
  engine's own atfork handler has already marked the parent's session stopped there), so
  the child's profile holds only the child's own samples.
- **exec of a Python interpreter** (``subprocess`` of ``sys.executable``, multiprocessing's
  spawn and forkserver start methods, ``os.exec*``, ``os.posix_spawn``): the functions that
  exec are wrapped, and only when the new program is a Python interpreter they add two
  variables to *that exec's* environment: ``HEATLINE_CHILD`` (the run's settings, marshal
  in hex: the child decodes it with built-in modules only, no json or re) and
  ``PYTHONPATH`` with heatline's hook directory first. The interpreter imports
  ``sitecustomize`` from there (heatline/_child/sitecustomize.py), which puts PYTHONPATH back
  as it was, takes the hook directory out of sys.path, runs the real sitecustomize if any, and
  starts profiling. The program's own os.environ never holds heatline's variables, so neither
  a child nor anything the child passes its environment to sees them.
- Every profiled child writes ``<pid>-<token>.started`` into the run directory (mode 0700)
  when it starts, and its raw engine snapshot (marshal) as ``<pid>-<token>.prof`` when it
  ends: at interpreter exit (atexit), in ``os._exit`` (wrapped in children: fork-start
  workers end that way), on SIGTERM (``pool.terminate()``; handled as runner's _SigtermGuard
  does for the main process), and before the child itself execs. The main process merges
  them (profile/merge.py) and removes the directory; it never waits for a child.

Only this module and heatline/_child/ know of the mechanism; runner.py calls
:func:`enable` and :func:`collect`.
"""

from __future__ import annotations

import marshal
import os
import sys
import time

# typing only for the annotations (strings here): importing it costs a child process about
# 10 ms (re, functools, collections...), and this module is on a child's start path.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

ENV_CONFIG = "HEATLINE_CHILD"
ENV_PYTHONPATH = "PYTHONPATH"
_RUN_DIR = os.path.dirname(os.path.abspath(__file__))
HOOK_DIR = os.path.join(_RUN_DIR, "_child")
# The directory `import heatline` finds heatline in (a child may have another sys.path).
IMPORT_ROOT = os.path.dirname(os.path.dirname(_RUN_DIR))

# Modules heatline wraps a function of: they must stay in sys.modules while the program runs
# (runner's module set-aside keeps them), or the program would import a fresh, unwrapped copy.
WRAPPED_MODULES = ("_posixsubprocess",)

_carrier: _Carrier | None = None  # this process's, once enabled


class _Carrier:
    """What this process needs to carry the profiler into its children: the run's settings,
    the real functions it wrapped, and (in a profiled child) its own session."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.config = config  # {"dir", "session", "root", "hook", "start_epoch"}
        self.finisher: _ChildFinisher | None = None
        self.real: dict[str, Any] = {}
        self.guard: Any = None  # a profiled child's SIGTERM guard (runner._SigtermGuard)

    # -- exec ---------------------------------------------------------------------------

    def env_for(self, args: Any, env: Any) -> Any:
        """The environment an exec of ``args`` gets: ``env`` (a mapping of str or bytes, a
        list of b"K=V", or None for this process's environment) plus heatline's variables
        when the program is a Python interpreter heatline can follow; else ``env``."""
        role = _python_role(args)
        if role is None:
            return env
        as_list = isinstance(env, list)
        if env is None:
            items = list(os.environb.items())
        elif as_list:
            items = [entry.split(b"=", 1) for entry in env if b"=" in entry]
        else:
            items = [(os.fsencode(k), os.fsencode(v)) for k, v in env.items()]
        values = dict(items)
        original = values.get(b"PYTHONPATH")
        config = dict(self.config, role=role, parent=os.getpid(),
                      pythonpath=None if original is None else os.fsdecode(original))
        values[ENV_CONFIG.encode()] = encode_config(config)
        hook = os.fsencode(self.config["hook"])
        values[b"PYTHONPATH"] = hook + (b":" + original if original is not None else b"")
        if as_list or env is None:
            return [k + b"=" + v for k, v in values.items()]
        if env and isinstance(next(iter(env)), str):
            return {os.fsdecode(k): os.fsdecode(v) for k, v in values.items()}
        return values

    def finish_before_exec(self) -> None:
        """A profiled child that execs another program writes its profile first: the exec
        replaces it, and no exit handler runs (a failed exec goes on unprofiled)."""
        if self.finisher is not None and self.finisher.pid == os.getpid():
            self.finisher.exit = "exec"
            self.finisher()

    # -- fork ---------------------------------------------------------------------------

    def after_fork_in_child(self) -> None:
        if self.guard is not None:  # the parent child's: the child gets its own
            self.guard._in_child()
            self.guard = None
        try:
            start_child(self, "fork child", os.getppid(), gpu=0)
        except Exception:  # noqa: BLE001 -- the child must run even if heatline cannot follow
            pass


def encode_config(config: dict[str, Any]) -> bytes:
    """HEATLINE_CHILD's value: marshal (plain values only), in hex; heatline/_child/
    sitecustomize.py decodes it with built-in modules only (json would import re, enum...)."""
    return marshal.dumps(config).hex().encode()


def enable(options_session_arguments: dict[str, Any]) -> None:
    """In the main process, before the program runs: make a private run directory and carry
    the profiler into every child the program starts."""
    global _carrier
    config = {"dir": _make_run_dir(), "session": options_session_arguments,
              "root": IMPORT_ROOT, "hook": HOOK_DIR, "start_epoch": time.time()}
    _carrier = _Carrier(config)


def _make_run_dir() -> str:
    """A new directory heatline-XXXXXXXXXXXX, mode 0700, in the temporary directory, as
    tempfile.mkdtemp makes it, without importing tempfile (and shutil, random...) into the
    program."""
    from heatline.engine.control import _temp_dir

    parent = _temp_dir()
    while True:
        path = os.path.join(parent, "heatline-" + os.urandom(6).hex())
        try:
            os.mkdir(path, 0o700)
            return os.path.abspath(path)
        except FileExistsError:
            continue


def install() -> None:
    """After enable(), once the program's SIGTERM guard is installed: the hooks."""
    if _carrier is not None:
        _install(_carrier)


def _install(carrier: _Carrier) -> None:
    global _carrier
    _carrier = carrier
    if hasattr(os, "register_at_fork"):
        from heatline.engine import session

        os.register_at_fork(after_in_child=carrier.after_fork_in_child)
        session.fork_child_profiles = True  # it keeps the memory hooks it inherits
    _wrap_exec(carrier)


def _wrap_exec(carrier: _Carrier) -> None:
    import _posixsubprocess

    real = carrier.real
    real["fork_exec"] = _posixsubprocess.fork_exec

    def fork_exec(args: Any, executable_list: Any, close_fds: Any, pass_fds: Any, cwd: Any,
                  env: Any, *rest: Any, **kwargs: Any) -> Any:
        try:
            env = carrier.env_for([executable_list[0], *args[1:]] if executable_list else args,
                                  env)
        except Exception:  # noqa: BLE001 -- never stop the program's exec
            pass
        return real["fork_exec"](args, executable_list, close_fds, pass_fds, cwd, env,
                                 *rest, **kwargs)

    _posixsubprocess.fork_exec = fork_exec
    for name in ("execv", "execve", "posix_spawn", "posix_spawnp"):
        if hasattr(os, name):
            real[name] = getattr(os, name)

    def execv(path: Any, argv: Any) -> Any:
        carrier.finish_before_exec()
        env = _try_env(carrier, [path, *argv[1:]], None)
        if env is None:
            return real["execv"](path, argv)
        return real["execve"](path, argv, env)

    def execve(path: Any, argv: Any, env: Any) -> Any:
        carrier.finish_before_exec()
        return real["execve"](path, argv, _try_env(carrier, [path, *argv[1:]], env, env))

    def spawner(name: str) -> Any:
        def spawn(path: Any, argv: Any, env: Any, *rest: Any, **kwargs: Any) -> Any:
            env = _try_env(carrier, [path, *argv[1:]], env, env)
            return real[name](path, argv, env, *rest, **kwargs)
        spawn.__name__ = spawn.__qualname__ = name
        return spawn

    for function in (execv, execve):
        if function.__name__ in real:
            setattr(os, function.__name__, function)
    for name in ("posix_spawn", "posix_spawnp"):
        if name in real:
            setattr(os, name, spawner(name))


def _try_env(carrier: _Carrier, args: Any, env: Any, fallback: Any = None) -> Any:
    try:
        new = carrier.env_for(args, env)
    except Exception:  # noqa: BLE001 -- never stop the program's exec
        return fallback
    if new is env:
        return fallback
    if isinstance(new, list):  # execve/posix_spawn want a mapping
        return dict(entry.split(b"=", 1) for entry in new)
    return new


def _python_role(args: Any) -> str | None:
    """The role of a Python child about to be exec'd with ``args`` (the executable first, or
    the list of paths tried), or None when it is not a Python interpreter heatline follows."""
    try:
        first = os.fsdecode(args[0])
    except (TypeError, IndexError):
        return None
    name = os.path.basename(first)
    own = os.path.realpath(sys.executable) if sys.executable else ""
    version = name[len("python"):].replace(".", "")
    is_python = name.startswith("python") and (not version or version.isdigit()) or (
        bool(own) and os.path.realpath(first) == own)
    return _role_of_command(args) if is_python else None


def _role_of_command(args: Any) -> str | None:
    """From a Python command line: None when the child would not run sitecustomize from
    PYTHONPATH (-E, -I, -S) or is multiprocessing's resource tracker (it lives until after
    the main process ends); else the child's role."""
    try:
        words = [os.fsdecode(a) for a in args[1:]] if len(args) > 1 else []
    except TypeError:
        return None
    text = " ".join(words)
    if "multiprocessing.resource_tracker" in text:
        return None
    index = 0
    while index < len(words):
        word = words[index]
        if not word.startswith("-") or word in ("-", "--") or word.startswith("--"):
            break
        letters = word[1:]
        for position, letter in enumerate(letters):
            if letter in "EIS":
                return None
            if letter in "cm":
                index = len(words)
                break
            if letter in "XW":
                if position == len(letters) - 1:
                    index += 1
                break
        index += 1
    if "multiprocessing.forkserver" in text:
        return "forkserver"
    if "--multiprocessing-fork" in words:
        return "spawned process"
    return "python subprocess"


# -- in the child ---------------------------------------------------------------------------


def start_spawned(config: dict[str, Any]) -> None:
    """Called by heatline/_child/sitecustomize.py in an exec'd Python child."""
    carrier = _Carrier(config)
    _install(carrier)
    if config.get("role") == "forkserver":
        return  # it only forks the workers, which profile themselves; it lives past the run
    start_child(carrier, config.get("role", "python subprocess"), config.get("parent", 0),
                gpu=None)


def start_child(carrier: _Carrier, role: str, ppid: int, gpu: int | None) -> None:
    """Start a fresh session in this (child) process and arrange for its profile to be
    written into the run directory whichever way the process ends."""
    import atexit

    from heatline.run import runner
    from heatline.engine import session as session_module

    arguments = dict(carrier.config["session"])
    arguments["control"] = False  # `heatline ctl PID` acts on the main process only
    if gpu is not None:
        arguments["gpu"] = gpu  # CUPTI and NVML state does not survive fork()
    previous = carrier.finisher
    if previous is not None and previous.session._running:
        previous.session._running = False  # the parent's, stopped by the engine's fork handler
    session = session_module.Session(program=_program_label(), argv=list(sys.argv), **arguments)
    token = f"{os.getpid()}-{time.monotonic_ns():x}"
    finisher = _ChildFinisher(carrier, session, role, ppid, token)
    session.start()
    carrier.finisher = finisher
    _touch(os.path.join(carrier.config["dir"], token + ".started"))
    atexit.register(finisher)
    _wrap_exit(carrier, finisher)
    carrier.guard = runner._SigtermGuard(finisher)
    carrier.guard.install(at_fork=False)  # the carrier's fork hook disarms it in a child
    if carrier.guard.armed:
        from heatline import _native

        _native._chain_sigterm()  # the handler must run even if the signal races a wait


def _program_label() -> str:
    argv0 = sys.argv[0] if sys.argv else ""
    if argv0 and argv0 not in ("-c", "-m") and os.path.exists(argv0):
        return os.path.abspath(argv0)
    return argv0 or sys.executable


def _wrap_exit(carrier: _Carrier, finisher: _ChildFinisher) -> None:
    real_exit = carrier.real.setdefault("_exit", os._exit)

    def _exit(status: int) -> Any:
        if finisher.pid == os.getpid():
            finisher.exit = f"os._exit({status})"
            finisher()
        return real_exit(status)

    os._exit = _exit


def _touch(path: str) -> None:
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600))
    except OSError:
        pass  # the run directory is gone (the main process ended first): nothing to report to


class _ChildFinisher:
    """Stops a child's session and writes its raw snapshot, once, from whichever exit path
    comes first (atexit, os._exit, SIGTERM, exec). Never raises."""

    def __init__(self, carrier: _Carrier, session: Any, role: str, ppid: int, token: str) -> None:
        self.carrier = carrier
        self.session = session
        self.role = role
        self.ppid = ppid
        self.token = token
        self.pid = os.getpid()
        self.succeeded = True  # what runner._SigtermGuard sets
        self.exit = "exit"
        self.start_epoch = time.time()

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
            from heatline.run import runner

            if runner._terminating or not self.succeeded and self.exit == "exit":
                self.exit = "SIGTERM"
            self._write()
        except BaseException as exc:  # noqa: BLE001 -- a profiler failure never changes the child
            self._record_failure(exc)
        finally:
            _unblock(blocked)

    def _record_failure(self, exc: BaseException) -> None:
        """What went wrong, one line in <token>.failed, for the main process to report."""
        try:
            from heatline.run import runner

            text = runner._one_line(exc)[:300]
            path = os.path.join(self.carrier.config["dir"], self.token + ".failed")
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
            try:
                os.write(fd, text.encode("utf-8", "replace"))
            finally:
                os.close(fd)
        except BaseException:  # noqa: BLE001 -- the report then says only that it is missing
            pass

    def _write(self) -> None:
        import marshal

        from heatline import _native

        session = self.session
        session.stop()
        payload = {
            "pid": os.getpid(),
            "ppid": self.ppid,
            "role": _refine_role(self.role),
            "program": session.program,
            "argv": [str(a) for a in session.argv],
            "exit": self.exit,
            "start_epoch": self.start_epoch,
            "started_at": session._started_at,
            "elapsed_s": session._wall_stop - session._wall_start,
            "cpu_s": session._cpu_stop - session._cpu_start,
            "interval_s": session.interval_s,
            "snapshot": _native.snapshot(),
        }
        directory = self.carrier.config["dir"]
        temporary = os.path.join(directory, self.token + ".tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        with open(fd, "wb") as f:
            marshal.dump(payload, f)
        os.replace(temporary, os.path.join(directory, self.token + ".prof"))


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
    """A multiprocessing child's role from its process name and target (read at exit)."""
    process = sys.modules.get("multiprocessing.process")
    if process is None or role not in ("fork child", "spawned process"):
        return role
    current = process.current_process()
    name = current.name
    if name == "MainProcess":
        return role
    if "PoolWorker" in name:
        return "Pool worker"
    # A torch DataLoader's workers are plain multiprocessing processes running its worker
    # loop (the parent deletes a process's target once started; the child keeps its copy).
    target = getattr(current, "_target", None)
    if (getattr(target, "__module__", None) == "torch.utils.data._utils.worker"
            and getattr(target, "__name__", None) == "_worker_loop"):
        return "DataLoader worker"
    if "concurrent.futures.process" in sys.modules:
        return "ProcessPoolExecutor worker"
    return f"multiprocessing process ({name})"


# -- in the main process, at the end ----------------------------------------------------------


def collect(main_profile: dict[str, Any]) -> dict[str, Any]:
    """The main profile merged with every child's (profile/merge.py); the run directory is
    removed. Children still running are not waited for."""
    carrier = _carrier
    if carrier is None:
        return main_profile
    import marshal

    from heatline.run import runner
    from heatline.data.build import build_profile
    from heatline.data.merge import merge_processes

    directory = carrier.config["dir"]
    try:
        names = os.listdir(directory)
    except OSError:
        names = []
    children = []
    started = {name[: -len(".started")] for name in names if name.endswith(".started")}
    finished = set()
    problems = []  # one line per child that tried to write its profile and failed
    for name in names:
        if name.endswith(".failed"):
            problems.append(f"child process {name.split('-')[0]} could not write its profile: "
                            + _read_line(os.path.join(directory, name)))
        if not name.endswith(".prof"):
            continue
        try:
            with open(os.path.join(directory, name), "rb") as f:
                payload = marshal.load(f)
            profile = build_profile(
                payload["snapshot"],
                program=payload["program"],
                argv=payload["argv"],
                started_at=payload["started_at"],
                elapsed_s=payload["elapsed_s"],
                cpu_s=payload["cpu_s"],
                interval_s=payload["interval_s"],
            )
        except Exception as exc:  # noqa: BLE001 -- a torn or foreign file costs only that child
            problems.append(f"the profile of child process {name.split('-')[0]} could not be "
                            f"read: {runner._one_line(exc)[:300]}")
            continue
        finished.add(name[: -len(".prof")])
        info = {key: payload[key] for key in ("pid", "ppid", "role", "argv", "exit")}
        info["offset_s"] = payload["start_epoch"] - carrier.config["start_epoch"]
        children.append((info, profile))
    _remove_dir(directory)
    missing = len(started - finished)
    if not children and not missing:
        return main_profile
    main_info = {"pid": os.getpid(), "ppid": os.getppid(), "role": "main",
                 "argv": list(main_profile["argv"]), "exit": "exit", "offset_s": 0.0}
    merged = merge_processes((main_info, main_profile), children, missing=missing)
    merged["warnings"] += sorted(problems)
    return merged


def _read_line(path: str) -> str:
    try:
        with open(path, "rb") as f:
            return f.read(300).decode("utf-8", "replace")
    except OSError as exc:
        return f"(its error could not be read: {exc.strerror})"


def discard() -> None:
    """Remove the run directory without merging (the main profile could not be built)."""
    if _carrier is not None:
        _remove_dir(_carrier.config["dir"])


def _remove_dir(directory: str) -> None:
    """Remove the run directory (flat: files only). With os alone: this may run outside
    heatline's own imports, where `shutil` could be the program's."""
    for _ in range(5):  # a child still running may add a file meanwhile
        try:
            names = os.listdir(directory)
        except OSError:
            return
        for name in names:
            try:
                os.unlink(os.path.join(directory, name))
            except OSError:
                pass
        try:
            os.rmdir(directory)
            return
        except OSError:
            pass
