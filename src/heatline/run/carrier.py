"""Child processes: carrying the profiler into every Python child the program starts, and
collecting what they saw (docs/design-running.md, "Child processes").

- **fork** (``os.fork``, multiprocessing's fork start method, the fork server's children): an
  ``os.register_at_fork(after_in_child=...)`` hook starts a fresh engine in the child (the
  engine's own atfork handler has already marked the parent's session stopped there), so
  the child's profile holds only the child's own samples.
- **exec of a Python interpreter** (``subprocess`` of ``sys.executable``, multiprocessing's
  spawn and forkserver start methods, ``os.exec*``, ``os.posix_spawn``): the functions that
  exec are wrapped, and only when the new program is a Python interpreter heatline can
  profile (:func:`followable`) they add two variables to *that exec's* environment (given
  none, the C environment, as exec passes it on): ``HEATLINE_CHILD`` (the run's settings,
  marshal in hex: the child decodes it with built-in modules only, no json or re) and
  ``PYTHONPATH`` with heatline's hook directory first. The interpreter imports
  ``sitecustomize`` from there (heatline/run/_child/sitecustomize.py), which puts PYTHONPATH back
  as it was, takes the hook directory out of sys.path, runs the real sitecustomize if any, and
  starts profiling. The program's own os.environ never holds heatline's variables, so neither
  a child nor anything the child passes its environment to sees them.
- Every profiled child makes ``<pid>-<token>.started`` in the run directory (mode 0700)
  when it starts, and writes its raw engine snapshot (marshal) into that file when it ends,
  renamed ``<pid>-<token>.prof``: at interpreter exit (atexit), in ``os._exit`` (wrapped in
  children: fork-start workers end that way), on SIGTERM (``pool.terminate()``; handled as
  runner's _SigtermGuard does for the main process), and before the child itself execs. After
  an exit through exit(), the engine appends the exit status to it (exitstatus.h). The main
  process merges them (data/merge.py) and removes the directory; it never waits for a child.

An exec of the main process itself hands the run over to the exec'd Python program, or
ends it there (handover.py).

This module says what an exec'd child is given; follow.py installs the hooks and runs a
child's session; collect.py merges what the children wrote; heatline/run/_child/ is the
child's start-up hook. launch.py calls :func:`enable` and follow.install, finish.py collect.
"""

from __future__ import annotations

import _thread
import marshal
import os
import sys

# typing only for type checkers: a run's path imports none (heatline/__init__.py).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from heatline.options import Options

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
        # {"dir", "session", "root", "hook", "start_epoch", "children"}; in the exec'd program
        # that continues the run (handover.py) also "main": the run's options.
        self.config = config
        self.finisher: Any = None  # a profiled child's follow.ChildFinisher
        self.main: Any = None  # the run's finish.Finisher, in the run's main process
        self.main_exec: Any = None  # what its exec does first (handover.before_exec)
        self.main_epoch = config["start_epoch"]  # when the main process's session started
        # The token of the part of the main process written for an exec (handover.py) while
        # its stopped session is still this process's: not merged again if this process
        # finishes the run after all (SIGTERM before the exec).
        self.written_segment: str | None = None
        self.real: dict[str, Any] = {}
        self.guard: Any = None  # a profiled child's SIGTERM guard (sigterm.SigtermGuard)
        self.exec_forks: set[int] = set()  # threads inside fork_exec now
        # (module, name, wrapper) for each function wrap_exec replaced (unwrap_exec).
        self.wrapped: list[tuple[Any, str, Any]] = []

    def ended(self) -> bool:
        """Whether the children this carrier follows have nowhere to go any more: an attach's
        directory, removed by the attacher once it has its profile (follow.follow_attached):
        a child started after that is not followed."""
        return bool(self.config.get("attach")) and not os.path.isdir(self.config["dir"])

    # -- exec ---------------------------------------------------------------------------

    def env_for(self, args: Any, env: Any, role: str | None = None) -> Any:
        """The environment an exec of ``args`` gets: ``env`` (a mapping of str or bytes, a
        list of b"K=V", or None for this process's environment) plus heatline's variables
        when the program is a Python interpreter heatline can follow as a child (or, given
        ``role``, as that: "main" for the run handed over at an exec); else ``env``."""
        if role is None:
            role = self.child_role(args)
        if role is None or self.ended():
            return env
        as_list = isinstance(env, list)
        if env is None:
            # The C environment, which an exec without one passes on: os.environb is a copy
            # made at start-up, blind to os.putenv, os.unsetenv and a C library's setenv.
            from heatline.engine.session import process_environ

            items = [entry.split(b"=", 1) for entry in process_environ() if b"=" in entry]
        elif as_list:
            items = [entry.split(b"=", 1) for entry in env if b"=" in entry]
        else:
            items = [(os.fsencode(k), os.fsencode(v)) for k, v in env.items()]
        values = dict(items)
        if role != "main":
            role = launcher_role(values) or role
        values.update(self.variables(role, values.get(b"PYTHONPATH")))
        if as_list or env is None:
            return [k + b"=" + v for k, v in values.items()]
        if env and isinstance(next(iter(env)), str):
            return {os.fsdecode(k): os.fsdecode(v) for k, v in values.items()}
        return values

    def variables(self, role: str, pythonpath: bytes | None,
                  parent: int | None = None) -> dict[bytes, bytes]:
        """heatline's two variables for a followed child of ``role`` whose environment has
        ``pythonpath`` (None: none): the settings, and PYTHONPATH with the hook directory
        first (the hook takes it out again). An empty PYTHONPATH, which python takes as none,
        gives the directory alone with a trailing separator ("DIR:" would put the child's
        working directory on its sys.path): the hook puts back the empty value. ``parent``:
        the child's parent (None: this process; 0: whichever process it has, for the
        processes of a command, run/command.py)."""
        from heatline.engine.session import tables_for_children

        if "pycache" not in self.config:  # once per process; a child passes its parent's on
            self.config["pycache"] = bytecode_for_children(self.config["dir"])
        config = dict(self.config, role=role, parent=os.getpid() if parent is None else parent,
                      tables=tables_for_children())
        if role == "main":  # the run goes on in the exec'd program, with these options
            from heatline.options import RUN_OPTIONS  # not on a child's start path

            config["main"] = {"options": {option.dest: getattr(self.main.options, option.dest)
                                          for option in RUN_OPTIONS}}
        else:
            config.pop("main", None)
        hook = os.fsencode(self.config["hook"])
        return {ENV_CONFIG.encode(): encode_config(config),
                b"PYTHONPATH": (hook if pythonpath is None else
                                hook + os.sep.encode() if not pythonpath else
                                hook + b":" + pythonpath)}

    def preexec_for(self, args: Any, preexec_fn: Any) -> Any:
        """For subprocess with the inherited environment and the program's own ``preexec_fn``:
        the exec passes on the C environment of the child as preexec_fn leaves it (a putenv
        there counts, as under python), so heatline's variables are added there, after it, in
        the forked child; the program's own os.environ never sees them. ``preexec_fn``
        itself when the program is not followed."""
        role = self.child_role(args)
        if role is None or self.ended():
            return preexec_fn
        carrier = self

        def preexec() -> None:
            preexec_fn()
            try:
                from heatline.engine.session import process_environ

                prefix = b"PYTHONPATH="
                found = [e[len(prefix):] for e in process_environ() if e.startswith(prefix)]
                for name, value in carrier.variables(role, found[0] if found else None).items():
                    os.putenv(name, value)
            except Exception:  # noqa: BLE001 -- the child then runs unprofiled, as it would
                pass

        return preexec

    def child_role(self, args: Any) -> str | None:
        """The role of the Python child ``args`` starts, or None when it is not followed
        (not a Python heatline follows, or --no-children)."""
        return python_role(args) if self.config.get("children", True) else None

    def before_exec(self, path: Any, argv: Any, env: Any) -> tuple[Any, Any]:
        """About to exec ``path`` (os.execv: ``env`` None; os.execve): the environment to exec
        with (None: the process's own, execv) and what to call if the exec fails. The run's
        main process hands the run over or ends it (handover.py); a profiled child writes
        its profile first (the exec replaces it and no exit handler runs; a failed exec goes
        on unprofiled)."""
        if self.main is not None and self.main.pid == os.getpid() and self.main_exec:
            return self.main_exec(self, path, argv, env)  # type: ignore[no-any-return]
        if self.finisher is not None and self.finisher.pid == os.getpid():
            self.finisher.exit = "exec"
            self.finisher()
        return _try_env(self, [path, *argv[1:]], env, env), _nothing


# The modules of heatline a followed child imports as it starts (tests/integration/
# test_children.py checks the list against a child's sys.modules).
CHILD_MODULES = (
    "heatline", "heatline._version", "heatline.run", "heatline.run.carrier",
    "heatline.run.follow", "heatline.run.output", "heatline.run.sigterm", "heatline.engine",
    "heatline.engine.scope", "heatline.engine.session", "heatline.engine.steps",
    "heatline.engine.threadnames", "heatline.integrations", "heatline.integrations.torch_watch",
)
# The standard library's modules with a source that CHILD_MODULES import: each begins with
# `from __future__ import annotations`, which imports __future__. While the child imports
# through the cache (sys.pycache_prefix), it looks for their bytecode there too, and compiled
# __future__ from source without it (about a million instructions of each child's start).
CHILD_LIBRARY_MODULES = ("__future__",)


def bytecode_for_children(directory: str | None) -> str | None:
    """A bytecode cache for the modules a child imports as it starts (CHILD_MODULES), in the
    run directory, when any of them has no fresh cached bytecode of its own (__pycache__): a
    heatline installed without it (an editable install under PYTHONDONTWRITEBYTECODE, a
    read-only tree) had every child compile them from source, about 20 ms of each child's
    start. The child reads them through sys.pycache_prefix while it imports heatline
    (_child/sitecustomize.py), which then looks there only: so all of them are written, and
    CHILD_LIBRARY_MODULES' too. importlib checks each file against its source (magic number,
    mtime, size) as it does any cached bytecode, and compiles the source when it does not
    match (another Python version).
    Returns the cache's directory, or None when none is needed or it could not be written.
    Imports nothing."""
    if directory is None:
        return None
    import _frozen_importlib_external as bootstrap  # the interpreter's importlib, loaded at start

    sources = []
    for name in CHILD_MODULES:
        parts = name.split(".")
        package = os.path.join(IMPORT_ROOT, *parts, "__init__.py")
        sources.append(package if os.path.exists(package)
                       else os.path.join(IMPORT_ROOT, *parts) + ".py")
    if all(_fresh_bytecode(bootstrap.cache_from_source(source, optimization=""), source, bootstrap)
           for source in sources):
        return None
    for name in CHILD_LIBRARY_MODULES:  # this interpreter's: another one's misses, as before
        # Found, not imported (heatline's own copy is set aside from the program's modules).
        source = getattr(bootstrap.PathFinder.find_spec(name), "origin", None)
        if isinstance(source, str) and source.endswith(".py"):
            sources.append(source)
    prefix = os.path.join(directory, "pycache")
    tag = sys.implementation.cache_tag
    try:
        for source in sources:
            head, tail = os.path.split(source)
            with open(source, "rb") as f:
                data = f.read()
            stat = os.stat(source)
            # optimize=0: the file name says no -O (a child run with -O compiles its own).
            code = compile(data, source, "exec", dont_inherit=True, optimize=0)
            name = f"{tail.rpartition('.')[0]}.{tag}.pyc"
            target = os.path.join(prefix, head.lstrip(os.sep), name)
            os.makedirs(os.path.dirname(target), mode=0o700, exist_ok=True)
            header = (bootstrap.MAGIC_NUMBER + (0).to_bytes(4, "little")
                      + (int(stat.st_mtime) & 0xFFFFFFFF).to_bytes(4, "little")
                      + (stat.st_size & 0xFFFFFFFF).to_bytes(4, "little"))
            temporary = target + ".tmp"
            with open(temporary, "wb") as f:
                f.write(header + marshal.dumps(code))
            os.replace(temporary, target)
    except (OSError, SyntaxError, ValueError):
        return None  # the children compile heatline's modules themselves, as before
    return prefix


def _fresh_bytecode(cached: str, source: str, bootstrap: Any) -> bool:
    """Whether ``cached`` holds bytecode importlib would take for ``source``: this Python's
    magic number and the source's mtime and size (a timestamp-based file), or a hash-based
    one (taken as it is)."""
    try:
        with open(cached, "rb") as f:
            header = f.read(16)
        stat = os.stat(source)
    except OSError:
        return False
    if len(header) < 16 or header[:4] != bootstrap.MAGIC_NUMBER:
        return False
    if int.from_bytes(header[4:8], "little") & 1:
        return True
    return (int.from_bytes(header[8:12], "little") == int(stat.st_mtime) & 0xFFFFFFFF
            and int.from_bytes(header[12:16], "little") == stat.st_size & 0xFFFFFFFF)


def encode_config(config: dict[str, Any]) -> bytes:
    """HEATLINE_CHILD's value: marshal (plain values only), in hex; heatline/run/_child/
    sitecustomize.py decodes it with built-in modules only (json would import re, enum...)."""
    return marshal.dumps(config).hex().encode()


def enable(options: Options, finisher: Any, main_exec: Any, start_epoch: float) -> Carrier:
    """In the main process, before the program runs: make a private run directory; the
    carrier returned carries the profiler into every child the program starts (follow.install;
    not with --no-children), and at an exec of the main process calls ``main_exec(carrier,
    path, argv, env)`` (handover.before_exec). ``finisher`` is the run's (finish.Finisher).
    start_epoch: when the main process's engine started (Session.start_epoch), which children's
    own start epochs are measured from."""
    try:
        directory = _make_run_dir()
    except OSError:
        if not options.no_children:
            raise
        directory = None  # only an exec would use it: the run then ends there instead
    config = {"dir": directory, "session": options.session_arguments(),
              "root": IMPORT_ROOT, "hook": HOOK_DIR, "start_epoch": start_epoch,
              "children": not options.no_children}
    carrier = Carrier(config)
    carrier.main, carrier.main_exec = finisher, main_exec
    adopt(carrier)
    return carrier


def current() -> Carrier | None:
    """This process's carrier: the main process's once enabled, a profiled child's own."""
    return _carrier


def adopt(carrier: Carrier | None) -> None:
    """Make ``carrier`` this process's (follow.install); None: none (an attach's end)."""
    global _carrier
    _carrier = carrier


def _make_run_dir() -> str:
    """A new directory heatline-XXXXXXXXXXXX, mode 0700, in the temporary directory, as
    tempfile.mkdtemp makes it, without importing tempfile (and shutil, random...) into the
    program."""
    from heatline.engine.control import temp_dir

    parent = temp_dir()
    while True:
        path = os.path.join(parent, "heatline-" + os.urandom(6).hex())
        try:
            os.mkdir(path, 0o700)
            return os.path.abspath(path)
        except FileExistsError:
            continue


def wrap_exec(carrier: Carrier, loaded: bool = False) -> None:
    """Wrap the functions that exec (subprocess's fork_exec, os.exec*, os.posix_spawn*): a
    Python child gets heatline's variables (env_for); a profiled process writes its profile
    before it execs. ``loaded``: the program has run already (heatline attach), and a
    ``subprocess`` it imported holds its own reference to fork_exec (3.11+), wrapped too.
    unwrap_exec puts them back."""
    import _posixsubprocess

    real = carrier.real
    real["fork_exec"] = _posixsubprocess.fork_exec

    def fork_exec(args: Any, executable_list: Any, close_fds: Any, pass_fds: Any, cwd: Any,
                  env: Any, *rest: Any, **kwargs: Any) -> Any:
        try:
            argv, candidates = _paths(args), _paths(executable_list)
            env_list = None if env is None else _paths(env)
            if argv and candidates and (env is None or env_list is not None):
                command = [_executed(candidates), *argv[1:]]
                at = _PREEXEC_AT - 6  # in rest
                if env is None and len(rest) > at and callable(rest[at]):
                    rest = (*rest[:at], carrier.preexec_for(command, rest[at]), *rest[at + 1:])
                else:
                    new_env = carrier.env_for(command, env_list)
                    if new_env is not env_list:
                        env = new_env
        except Exception:  # noqa: BLE001 -- never stop the program's exec
            pass
        # Its child runs only the preexec_fn before it execs (fork hooks run there when there
        # is one): not a fork child to profile (follow._after_fork_in_child).
        thread = _thread.get_ident()
        carrier.exec_forks.add(thread)
        try:
            return real["fork_exec"](args, executable_list, close_fds, pass_fds, cwd, env,
                                     *rest, **kwargs)
        finally:
            carrier.exec_forks.discard(thread)

    if carrier.config.get("children", True):
        _replace(carrier, _posixsubprocess, "fork_exec", fork_exec)
        subprocess = sys.modules.get("subprocess") if loaded else None
        if getattr(subprocess, "_fork_exec", None) is real["fork_exec"]:
            _replace(carrier, subprocess, "_fork_exec", fork_exec)
    for name in ("execv", "execve", "posix_spawn", "posix_spawnp"):
        if hasattr(os, name):
            real[name] = getattr(os, name)

    def execv(path: Any, argv: Any) -> Any:
        plain = _exec_arguments(path, argv, None, fd=False)
        if plain is None:
            return real["execv"](path, argv)  # refused as under python, heatline not involved
        return _exec(path, argv, plain, None)

    def execve(path: Any, argv: Any, env: Any) -> Any:
        plain = _exec_arguments(path, argv, env, fd=True)
        if plain is None:
            return real["execve"](path, argv, env)
        return _exec(path, argv, plain, env)

    def _exec(path: Any, argv: Any, plain: list[Any], env: Any) -> Any:
        new_env, failed = carrier.before_exec(path, plain, env)
        try:
            if new_env is None:
                return real["execv"](path, argv)
            return real["execve"](path, argv, new_env)
        except BaseException:
            failed()
            raise

    def spawner(name: str) -> Any:
        def spawn(path: Any, argv: Any, env: Any, *rest: Any, **kwargs: Any) -> Any:
            plain = _exec_arguments(path, argv, env, fd=False)
            if plain is not None:
                env = _try_env(carrier, [path, *plain[1:]], env, env)
            return real[name](path, argv, env, *rest, **kwargs)
        spawn.__name__ = spawn.__qualname__ = name
        return spawn

    for function in (execv, execve):
        if function.__name__ in real:
            _replace(carrier, os, function.__name__, function)
    for name in ("posix_spawn", "posix_spawnp"):
        if name in real and carrier.config.get("children", True):
            _replace(carrier, os, name, spawner(name))


def _os_supports(module: Any) -> list[set[Any]]:
    """os's sets of the functions that take a descriptor, a dir_fd...: a program asks
    `os.execve in os.supports_fd` (CPython's test_posix does), so a wrapper is listed where the
    function it wraps is. Empty for another module."""
    if module is not os:
        return []
    names = ("supports_fd", "supports_dir_fd", "supports_follow_symlinks",
             "supports_effective_ids")
    return [s for s in (getattr(os, name, None) for name in names) if isinstance(s, set)]


def _replace(carrier: Carrier, module: Any, name: str, wrapper: Any) -> None:
    for functions in _os_supports(module):
        if getattr(module, name) in functions:
            functions.add(wrapper)
    setattr(module, name, wrapper)
    carrier.wrapped.append((module, name, wrapper))


def unwrap_exec(carrier: Carrier) -> None:
    """Put back what wrap_exec replaced, where it is still heatline's wrapper (a program that
    replaced one since keeps its own)."""
    real = carrier.real
    for module, name, wrapper in carrier.wrapped:
        if getattr(module, name, None) is wrapper:
            setattr(module, name, real["fork_exec" if name == "_fork_exec" else name])
        for functions in _os_supports(module):
            functions.discard(wrapper)
    carrier.wrapped = []


def _nothing() -> None:
    pass


# Where _posixsubprocess.fork_exec takes preexec_fn (3.11 added process_group before it).
_PREEXEC_AT = 21 if sys.version_info >= (3, 11) else 20


_PATH_TYPES = (str, bytes, os.PathLike)


def _paths(value: Any) -> list[Any] | None:
    """``value`` as a new list when it is a list or tuple of paths (str, bytes, os.PathLike),
    else None. What heatline reads of an exec's sequences, and only so: the items the object
    holds, read as the real call reads them (a subclass's own __iter__ or __len__ is not
    called). Anything else goes to the real function untouched, to be refused or read as it
    would be (an object claiming sys.maxsize items is refused with MemoryError, never walked)."""
    if isinstance(value, list):
        items = list(list.__iter__(value))
    elif isinstance(value, tuple):
        items = list(tuple.__iter__(value))
    else:
        return None
    return items if all(isinstance(item, _PATH_TYPES) for item in items) else None


def _exec_arguments(path: Any, argv: Any, env: Any, fd: bool) -> list[Any] | None:
    """``argv`` as a list when os.exec*/posix_spawn would accept the call's arguments (``fd``:
    ``path`` may be a descriptor), else None: heatline then leaves the call to the real
    function, which refuses it as under python, without ending or handing over the run."""
    if not (isinstance(path, _PATH_TYPES) or (fd and isinstance(path, int))):
        return None
    argv = _paths(argv)
    try:
        if not argv or not os.fsencode(argv[0]):
            return None
    except (TypeError, ValueError):  # a path-like whose __fspath__ gives no path
        return None
    if env is not None and not (hasattr(env, "keys") and hasattr(env, "items")):
        return None
    return argv


def _executed(candidates: Any) -> Any:
    """The path fork_exec will run from its list of candidates (PATH's directories): the first
    that is an executable file, as execve tries them in order."""
    for candidate in candidates:
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return candidates[0]


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


def python_role(args: Any) -> str | None:
    """The role of a Python child about to be exec'd with ``args`` (the executable first), or
    None when it is not a Python interpreter heatline follows (:func:`followable`)."""
    try:
        first = os.fsdecode(args[0])
    except (TypeError, IndexError, ValueError):
        return None
    return _role_of_command(args) if followable(first) else None


def launcher_role(env: dict[bytes, bytes]) -> str | None:
    """The role of a torchrun worker from the launcher's variables in the environment an exec
    passes (torch.distributed.elastic's agent sets them for each worker it starts):
    "rank 3 (node 1, local rank 1)", with ", restart N" after a restart; None without them,
    or when they are this process's own (a rank's own subprocess inherits its rank's
    variables and is no rank). A few lookups in the mapping the exec builds anyway."""
    rank = env.get(b"RANK")
    run = env.get(b"TORCHELASTIC_RUN_ID")
    if rank is None or run is None or not rank.isdigit():
        return None
    if os.environb.get(b"RANK") == rank and os.environb.get(b"TORCHELASTIC_RUN_ID") == run:
        return None
    where = []
    for name, label in ((b"GROUP_RANK", "node"), (b"LOCAL_RANK", "local rank"),
                        (b"TORCHELASTIC_RESTART_COUNT", "restart")):
        value = env.get(name)
        if value is not None and value.isdigit() and (label != "restart" or value != b"0"):
            where.append(f"{label} {int(value)}")
    return f"rank {int(rank)}" + (f" ({', '.join(where)})" if where else "")


# The CPython versions heatline runs on. An interpreter of another version, or of one that
# heatline's engine is not built for, is not followed: its environment stays as the program
# passed it (a Python 2.7 given the hook failed to import it and skipped its own sitecustomize).
SUPPORTED_VERSIONS = ((3, 9), (3, 15))

_versions: dict[str, tuple[int, int] | None] = {}  # interpreter_version's, by real path
_engine_versions: set[tuple[int, int]] | None = None


def followable(path: str) -> bool:
    """Whether the program at ``path`` is a Python interpreter heatline can profile: named
    like one (``python``, ``python3``, ``python3.11``) or the very file of sys.executable, of
    a version told without running it (:func:`interpreter_version`) within
    SUPPORTED_VERSIONS, and with heatline's engine built for that version."""
    name = os.path.basename(path)
    version = name[len("python"):].replace(".", "")
    real = os.path.realpath(path)
    own = os.path.realpath(sys.executable) if sys.executable else ""
    if not (name.startswith("python") and (not version or version.isdigit()) or real == own):
        return False
    found = interpreter_version(path)
    low, high = SUPPORTED_VERSIONS
    return found is not None and low <= found <= high and found in _built_versions()


def interpreter_version(path: str) -> tuple[int, int] | None:
    """(major, minor) of the Python interpreter at ``path``, without running it (an exec may
    come often: every spawned worker), or None when it cannot be told: the very file of
    sys.executable is this interpreter's version; else the name of the file the path resolves
    to, or the path's own name, when it is ``pythonX.Y`` (a venv's ``python`` links to its
    base interpreter's; Debian's ``python3`` to ``python3.11``); else, for a ``python`` that
    links to no such name (a venv made with --copies, a build tree), the installation it
    belongs to: PREFIX/bin/python has its library, or a venv its site-packages, in
    PREFIX/lib/pythonX.Y, when only one such directory is there. A wrapper script (pyenv's
    shims) tells nothing: its interpreter is chosen when it runs."""
    real = os.path.realpath(path)
    if real not in _versions:
        _versions[real] = _version_of(path, real)
    return _versions[real]


def _version_of(path: str, real: str) -> tuple[int, int] | None:
    if sys.executable and real == os.path.realpath(sys.executable):
        return (sys.version_info[0], sys.version_info[1])
    for name in (os.path.basename(real), os.path.basename(path)):
        version = _named_version(name, "python")
        if version is not None:
            return version
    try:
        names = os.listdir(os.path.join(os.path.dirname(os.path.dirname(real)), "lib"))
    except OSError:
        return None
    found = {version for version in (_named_version(n, "python") for n in names) if version}
    return found.pop() if len(found) == 1 else None


def _named_version(name: str, prefix: str) -> tuple[int, int] | None:
    """(X, Y) from PREFIX + "X.Y" exactly (not python3.13t, a free-threaded build)."""
    if not name.startswith(prefix):
        return None
    major, dot, minor = name[len(prefix):].partition(".")
    if not (dot and major.isdigit() and minor.isdigit()):
        return None
    return (int(major), int(minor))


def engine_versions() -> list[tuple[int, int]]:
    """The CPython versions heatline can profile here: within SUPPORTED_VERSIONS, and with
    heatline's engine built for them."""
    low, high = SUPPORTED_VERSIONS
    return sorted(version for version in _built_versions() if low <= version <= high)


def _built_versions() -> set[tuple[int, int]]:
    """The versions heatline's engine is built for: _native.cpython-3XY-*.so in its package
    (an editable install may hold several)."""
    global _engine_versions
    if _engine_versions is None:
        found = {(sys.version_info[0], sys.version_info[1])}
        try:
            names = os.listdir(os.path.join(IMPORT_ROOT, "heatline"))
        except OSError:
            names = []
        for name in names:
            tag = name.split(".")[1] if name.startswith("_native.") and name.endswith(".so") else ""
            digits = tag.split("-")[1] if tag.startswith("cpython-") and "-" in tag[8:] else ""
            if digits.isdigit() and len(digits) >= 2:
                found.add((int(digits[0]), int(digits[1:])))
        _engine_versions = found
    return _engine_versions


def _role_of_command(args: Any) -> str | None:
    """From a Python command line: None when the child would not run sitecustomize from
    PYTHONPATH (-E, -I, -S) or is multiprocessing's or loky's resource tracker (it lives until
    after the main process ends, so it could never hand its profile in); else the child's
    role."""
    try:
        words = [os.fsdecode(a) for a in args[1:]] if len(args) > 1 else []
    except TypeError:
        return None
    text = " ".join(words)
    if "multiprocessing.resource_tracker" in text or "loky.backend.resource_tracker" in text:
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

