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

This module says what an exec'd child is given; follow.py installs the hooks and runs a
child's session; collect.py merges what the children wrote; heatline/run/_child/ is the
child's start-up hook. launch.py calls :func:`enable` and follow.install, finish.py collect.
"""

from __future__ import annotations

import marshal
import os
import sys

# typing only for the annotations (strings here): importing it costs a child process about
# 10 ms (re, functools, collections...), and this module is on a child's start path.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_RUN_DIR = os.path.dirname(os.path.abspath(__file__))
HOOK_DIR = os.path.join(_RUN_DIR, "_child")
# The directory `import heatline` finds heatline in (a child may have another sys.path).
IMPORT_ROOT = os.path.dirname(os.path.dirname(_RUN_DIR))

ENV_CONFIG = "HEATLINE_CHILD"


ENV_PYTHONPATH = "PYTHONPATH"


# Modules heatline wraps a function of: they must stay in sys.modules while the program runs
# (runner's module set-aside keeps them), or the program would import a fresh, unwrapped copy.
WRAPPED_MODULES = ("_posixsubprocess",)


_carrier: Carrier | None = None  # this process's, once enabled


class Carrier:
    """What this process needs to carry the profiler into its children: the run's settings,
    the real functions it wrapped, and (in a profiled child) its own session."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.config = config  # {"dir", "session", "root", "hook", "start_epoch"}
        self.finisher: Any = None  # a profiled child's follow.ChildFinisher
        self.real: dict[str, Any] = {}
        self.guard: Any = None  # a profiled child's SIGTERM guard (sigterm.SigtermGuard)

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


def encode_config(config: dict[str, Any]) -> bytes:
    """HEATLINE_CHILD's value: marshal (plain values only), in hex; heatline/_child/
    sitecustomize.py decodes it with built-in modules only (json would import re, enum...)."""
    return marshal.dumps(config).hex().encode()


def enable(options_session_arguments: dict[str, Any], start_epoch: float) -> Carrier:
    """In the main process, before the program runs: make a private run directory; the
    carrier returned carries the profiler into every child the program starts (follow.install).
    start_epoch: when the main process's engine started (Session.start_epoch), which children's
    own start epochs are measured from."""
    config = {"dir": _make_run_dir(), "session": options_session_arguments,
              "root": IMPORT_ROOT, "hook": HOOK_DIR, "start_epoch": start_epoch}
    adopt(Carrier(config))
    return current()  # type: ignore[return-value]


def current() -> Carrier | None:
    """This process's carrier: the main process's once enabled, a profiled child's own."""
    return _carrier


def adopt(carrier: Carrier) -> None:
    """Make ``carrier`` this process's (follow.install)."""
    global _carrier
    _carrier = carrier


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


def wrap_exec(carrier: Carrier) -> None:
    """Wrap the functions that exec (subprocess's fork_exec, os.exec*, os.posix_spawn*): a
    Python child gets heatline's variables (env_for); a profiled process writes its profile
    before it execs."""
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


def _try_env(carrier: Carrier, args: Any, env: Any, fallback: Any = None) -> Any:
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

