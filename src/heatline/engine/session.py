"""One profiling run: drives the engine (heatline._native, which only the engine package's
modules import) and hands its raw snapshot to heatline.data.build, which turns it into the
profile dict described in docs/profile-format.md."""

from __future__ import annotations

import gc
import os
import sys
import time

from heatline.engine import scope
from heatline.engine import steps as step_clock

# typing and collections.abc only for type checkers: a run's path imports neither
# (heatline/__init__.py).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

# Only what starting needs is imported here: modules for building the profile (json,
# heatline.data, linecache) are imported once the program is done, so that the
# program's garbage collections do not walk their objects (measured: with all of heatline's
# modules and theirs imported, bench/workloads.py alloc_python ran about 2.5% slower).

_active: Session | None = None
_fork_hooks_registered = False
# Whether every fork child starts a session of its own (it then keeps the memory hooks it
# inherited, which that session uses): keep_hooks_in_fork_children().
_fork_child_profiles = False
# The scope's library prefixes and the opcode table (about 4 ms to work out: sysconfig, and
# every launcher read; kept on disk for the next run, tablecache.py): the same for every
# session of this process, and of its fork children, which inherit them (a Pool worker's start).
_engine_tables: tuple[list[str], bytes] | None = None


def _snapshot(_native: Any) -> dict[str, Any]:
    """The engine's snapshot with its labels (regions and modules: labels.raw()). Labels are
    entered only through engine/labels.py: a program that did not import it entered none, and the
    snapshot has none (importing it then would import what the program did not)."""
    snapshot = _native.snapshot()
    # a module the program's thread is still importing may not have raw() yet: no labels yet
    raw = getattr(sys.modules.get("heatline.engine.labels"), "raw", None)
    if raw is not None:
        snapshot["labels"] = raw()
    return snapshot


def _watch_torch(on: bool) -> None:
    """While a session runs: torch's ranges and modules as labels once the program imports
    torch (engine/torch_labels.py), never importing it ourselves. torch_labels is imported
    only once torch is (a child's start imports only carrier.CHILD_MODULES)."""
    from heatline.integrations import torch_watch

    if on:
        torch_watch.when_imported("torch", _hook_torch)
    else:
        torch_watch.forget("torch", _hook_torch)
        uninstall = getattr(sys.modules.get("heatline.engine.torch_labels"), "uninstall", None)
        if uninstall is not None:
            uninstall()
        while _optimizer_hooks:
            _optimizer_hooks.pop().remove()


_optimizer_hooks: list[Any] = []


def _hook_torch(torch: Any) -> None:
    """The program has imported torch: its ranges and modules as labels, and each
    Optimizer.step() a step boundary (steps.py), until the session stops."""
    from heatline.engine import torch_labels

    torch_labels.install(torch)
    handle = step_clock.optimizer_hook(torch, _optimizer_step)
    if handle is not None:
        _optimizer_hooks.append(handle)


def _tables() -> tuple[list[str], bytes]:
    """The engine's tables: this process's, else those kept from an earlier run
    (tablecache.py), else worked out (and kept for the next run)."""
    global _engine_tables
    if _engine_tables is None:
        from heatline.engine import tablecache

        key = _tables_key()
        _engine_tables = tablecache.load(key)
        if _engine_tables is None:
            from heatline.engine import opcodes

            watched = tablecache.watch([*scope.scripts_dirs(), scope.__file__, opcodes.__file__])
            _engine_tables = (scope.default_exclude_prefixes(), opcodes.opcode_flags_table())
            tablecache.save(key, watched, *_engine_tables)
    return _engine_tables


def _tables_key() -> tuple[str, ...]:
    """What the tables depend on beyond the files they list: the interpreter's version and
    prefixes (sysconfig's and site's directories follow from them), the user base (site's user
    directories: PYTHONUSERBASE, else under HOME) and heatline's own directory. Read without
    importing anything."""
    return (sys.version, sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
            os.environ.get("PYTHONUSERBASE", ""), os.environ.get("HOME", ""), scope.__file__)


def tables_for_children() -> dict[str, Any]:
    """This process's engine tables (the scope's library prefixes and launchers, the opcode
    table) for an exec'd Python child (run/carrier.py), which uses them when its interpreter
    is the same (adopt_tables): working them out again is most of a spawned child's start
    (reading every launcher of the scripts directories: 2-20 ms on a loaded 2-core machine,
    more with more launchers)."""
    prefixes, opcode_flags = _tables()
    return {"key": _tables_key(), "prefixes": prefixes, "opcode_flags": opcode_flags}


def adopt_tables(tables: Any) -> bool:
    """In an exec'd child: take the parent's tables (tables_for_children) when they were made
    by an interpreter like this one (same key); False when they are not used."""
    global _engine_tables
    try:
        if tables["key"] != _tables_key():
            return False
        prefixes, opcode_flags = list(tables["prefixes"]), bytes(tables["opcode_flags"])
    except (KeyError, TypeError, ValueError):
        return False
    if not all(isinstance(prefix, str) for prefix in prefixes):
        return False
    _engine_tables = (prefixes, opcode_flags)
    return True


def _register_fork_hooks(native: Any) -> None:
    """Keep heatline's sampler thread out of the program's fork()s (see
    hl_engine_suspend_for_fork in engine.h), and let a fork child that profiles nothing run
    without the memory hooks it inherited (hl_engine_release_after_fork): once per process,
    harmless when not running."""
    global _fork_hooks_registered
    if _fork_hooks_registered or not hasattr(os, "register_at_fork"):
        return

    def after_in_child() -> None:
        if not _fork_child_profiles:
            native._release_after_fork()

    os.register_at_fork(
        before=native._suspend_for_fork, after_in_parent=native._resume_after_fork,
        after_in_child=after_in_child,
    )
    _fork_hooks_registered = True


def keep_hooks_in_fork_children(keep: bool = True) -> None:
    """Every fork child from now on starts a session of its own (run/follow.py), which uses
    the memory hooks it inherits: they are no longer released in the child. ``keep`` False:
    released again (heatline attach's end)."""
    global _fork_child_profiles
    _fork_child_profiles = keep


def watch_removal(path: str, callback: Any) -> None:
    """With a session running: the engine's sampler calls ``callback()`` once, on a short-lived
    thread, when ``path`` no longer exists (detach.h's watch, with a stop file that never
    appears: PATH/stop). Cleared by the session's stop. A child of heatline attach ends its
    profile so when the attacher has removed the attach's directory."""
    from heatline import _native

    _native._watch_detach(os.path.join(path, "stop"), path, callback)


def release_after_fork() -> None:
    """In a fork child that will not profile: take out the memory hooks it inherited
    (hl_engine_release_after_fork), as the fork hook does when children are not followed."""
    from heatline import _native

    _native._release_after_fork()


def active() -> Session | None:
    """The session running in this process, whoever started it (the command or the API)."""
    return _active


def forget_active(session: Session) -> None:
    """After fork(), in the child: ``session`` (the parent's, which the engine's fork handler
    stopped) is no longer this process's running session."""
    global _active
    if _active is session:
        _active = None


def chain_sigterm() -> bool:
    """Make sure a Python SIGTERM handler runs even when the signal races a wait, and tell a
    delivered SIGTERM from a simulated one (sigterm.h). False when nothing could be chained."""
    from heatline import _native

    return bool(_native._chain_sigterm())


def sigterm_delivered() -> bool:
    """In the SIGTERM handler: whether a SIGTERM really came since chain_sigterm() (False for
    _thread.interrupt_main(SIGTERM), which only simulates one); True when nothing is chained."""
    from heatline import _native

    return bool(_native._sigterm_delivered())


def record_exit_status(path: str) -> bool:
    """Have the status this process exits with written to ``path`` once it has exited, after
    Python's atexit handlers (exitstatus.h). False when it cannot be recorded."""
    from heatline import _native

    return bool(_native._record_exit_status(path))


def check_signals() -> None:
    """Run now the Python handlers of the signals that came meanwhile (PyErr_CheckSignals)."""
    from heatline import _native

    _native._check_signals()


def process_environ() -> list[bytes]:
    """The process's C environment now (b"NAME=value" each): what an exec without an explicit
    environment passes on, os.putenv's changes included (os.environ is a start-up copy)."""
    from heatline import _native

    return list(_native._environ())


def compile_program(source: bytes, path: str) -> Any:
    """compile(source, path, "exec", dont_inherit=True), the same code, without what compile()
    does first: test whether source is an AST, which makes the ast module's classes (9 M
    instructions, about 2.5 ms, and 600 objects that the program's gc.get_objects() would
    list), where python runs a script without them. A source with a NUL byte gets compile()'s
    own error."""
    if b"\0" in source:
        return compile(source, path, "exec", dont_inherit=True)
    from heatline import _native

    return _native._compile_program(source, path)


def pause() -> None:
    """Pause the running session's engine, if any (backs heatline.pause())."""
    if _active is not None:
        _active.pause()


def resume() -> None:
    """Resume the running session's engine, if any (backs heatline.resume())."""
    if _active is not None:
        _active.resume()


def step() -> None:
    """Mark a step boundary in the running session, if any (backs heatline.step())."""
    active = _active
    if active is not None and active.steps is not None:
        active.steps.mark(step_clock.EXPLICIT)


def _optimizer_step() -> None:
    """A torch Optimizer.step() ended: a step boundary unless the program marks its own."""
    active = _active
    if active is not None and active.steps is not None:
        active.steps.mark(step_clock.OPTIMIZER)


class Session:
    """Start the engine, stop it, and build the profile of what it saw in between."""

    def __init__(
        self,
        *,
        program: str,
        argv: Sequence[str],
        sampling_interval_s: float | None = None,  # None: options.DEFAULT_SAMPLING_INTERVAL_S
        profile_all: bool = False,
        only: Sequence[str] = (),
        exclude: Sequence[str] = (),
        paused: bool = False,
        memory_sampling_window_bytes: int = 0,  # 0: no memory profiling
        gpu: int = 0,  # 0 off, 1 on, 2 auto (on where NVML loads and reports a device)
        native: bool = False,  # native frames: the C functions under each line (native.c)
        control: bool = True,  # files through which `heatline ctl` turns profiling on/off
        main_native_id: int = 0,  # the thread reported as main (0: the one calling start())
        steps: Sequence[int] | None = None,  # --steps A:B: profile only steps A to B (steps.py)
        # A child of a windowed run: (its parent's window file, a state file of its own), the
        # command and state files of heatline ctl's control (control.h), through which it
        # follows its parent's window (announce_window).
        follow: Sequence[str] | None = None,
    ) -> None:
        self.program = program
        self.argv = list(argv)
        # Where sys.argv[0] is known only once the program runs (python -m: runpy puts the
        # module's file there after finding it), a function giving it then (None: not yet).
        self.argv0: Callable[[], str | None] | None = None
        if sampling_interval_s is None:  # options is imported only then: not on a child's start
            from heatline.options import DEFAULT_SAMPLING_INTERVAL_S

            sampling_interval_s = DEFAULT_SAMPLING_INTERVAL_S
        self.sampling_interval_s = sampling_interval_s
        self.profile_all = profile_all
        self.only = list(only)
        self.exclude = list(exclude)
        # The step window: the engine starts paused, the step clock turns it on and off.
        self.steps_window = None if steps is None else (int(steps[0]), int(steps[1]))
        self.paused = paused or self.steps_window is not None
        self.steps: step_clock.StepClock | None = None
        self.follow = None if follow is None else (str(follow[0]), str(follow[1]))
        self._window_file: str | None = None
        self._window_seq = 0
        self.memory_sampling_window_bytes = memory_sampling_window_bytes
        self.gpu = gpu
        self.native = native
        self.control = control
        self._endpoint: Any = None
        self._warnings: list[str] = []
        self.main_native_id = main_native_id
        # Applied to the engine's snapshot before the profile is built (@profile under the
        # CLI keeps only the decorated functions: heatline/engine/marked.py).
        self.snapshot_filter: Callable[[dict[str, Any]], dict[str, Any]] | None = None
        # time.time() and time.monotonic_ns() read together just before the engine started,
        # and the engine's memory clock origin (CLOCK_MONOTONIC) once a snapshot gave it.
        self._start_clock = (0.0, 0)
        self._origin_ns = 0
        self._wall_start = self._wall_stop = 0.0
        self._cpu_start = self._cpu_stop = 0.0
        self._steal_start = self._steal_stop = None
        self._running = False
        self._thread_names: Any = None  # threadnames.ThreadNames, from start()

    def start(self) -> None:
        """Start sampling. Raises RuntimeError/OSError from the engine if it cannot start."""
        global _active
        from heatline import _native

        _register_fork_hooks(_native)
        self._open_control()
        if self.follow is not None and self.paused and _says_on(self.follow[0]):
            self.paused = False  # started inside its parent's window
        # before the engine starts, so that its imports are not the program's allocations
        _watch_torch(True)
        try:
            self._start_engine(_native)
        except BaseException:
            _watch_torch(False)
            self._close_control()
            raise
        self.steps = step_clock.StepClock(self.steps_window, self._window_on, self._window_off)
        self._running = True
        _active = self

    def _open_control(self) -> None:
        if not self.control:
            return
        from heatline.engine import control

        try:
            self._endpoint = control.Endpoint(self.paused)
        except (OSError, control.ControlError) as exc:
            reason = str(exc) if isinstance(exc, control.ControlError) else (exc.strerror or exc)
            self._warnings.append(f"heatline ctl cannot reach this run: {reason}")

    def announce_window(self, path: str) -> None:
        """Write this session's step window's state to ``path`` as it opens ("SEQ on") and
        closes ("SEQ off"), for its child processes to follow: a DataLoader worker marks no
        steps of its own, and is profiled while its parent's window is open. Does nothing
        without a window; the file (mode 0600) is made now, "0 none"."""
        if self.steps_window is None:
            return
        from heatline.engine import control

        try:
            control.write_private(path, "0 none\n")
        except OSError:
            return
        self._window_file = path

    def _window_on(self) -> None:
        self.resume()
        self._tell_window("on")

    def _window_off(self) -> None:
        self.pause()
        self._tell_window("off")

    def _tell_window(self, word: str) -> None:
        if self._window_file is None:
            return
        from heatline.engine import control

        self._window_seq += 1
        try:
            control.write_private(self._window_file, f"{self._window_seq} {word}\n")
        except OSError:
            self._window_file = None  # the run directory is gone: nobody follows any more

    def _close_control(self) -> None:
        if self._endpoint is not None:
            self._endpoint.close()
            self._endpoint = None

    def _start_engine(self, _native: Any) -> None:
        endpoint = self._endpoint
        exclude_prefixes, opcode_flags = _tables()
        # The program run may itself be a launcher outside the scripts directories.
        program = scope.launcher_files_among([self.program])
        # The start of what is measured, read last, just before the engine starts: the work
        # above (the tables, the control files) can take over 0.1 s on a loaded machine, and
        # reading the clocks before it would put the profile's started_at that far before
        # time 0 of its timelines.
        self._steal_start = machine_steal_s()
        # Time 0 of the engine's memory timelines is taken during start (the snapshot gives
        # it as CLOCK_MONOTONIC, time.monotonic's clock): this pair turns it into wall time.
        self._start_clock = (time.time(), time.monotonic_ns())
        self._origin_ns = 0
        self._wall_start = time.perf_counter()
        self._cpu_start = time.process_time()
        _native.start(
            self.sampling_interval_s,
            exclude_prefixes=[*exclude_prefixes, *program],
            only=self.only,
            exclude=self.exclude,
            profile_all=self.profile_all,
            opcode_flags=opcode_flags,
            paused=self.paused,
            memory_sampling_window_bytes=self.memory_sampling_window_bytes,
            gpu=self.gpu,
            native=bool(self.native),
            control=(endpoint.command, endpoint.state) if endpoint is not None else self.follow,
            main_native_id=self.main_native_id,
        )
        from heatline.engine.threadnames import ThreadNames

        self._thread_names = names = ThreadNames()
        names.read()
        _native._on_new_threads(names.read)

    def stop(self) -> None:
        """Stop sampling (idempotent) and fix the end of the measured span."""
        global _active
        if not self._running:
            return
        from heatline import _native

        _native.stop()
        if self._thread_names is not None:
            self._thread_names.read_all()  # the last names of the threads alive
        _watch_torch(False)
        self._close_control()
        self._wall_stop = time.perf_counter()
        self._cpu_stop = time.process_time()
        self._steal_stop = machine_steal_s()
        self._running = False
        if _active is self:
            _active = None

    def stopped_by_fork(self) -> None:
        """In a fork child: this (the parent's) session was stopped by the engine's fork
        handler; stop() has nothing left to do."""
        self._running = False

    @property
    def start_epoch(self) -> float:
        """The wall-clock time (time.time()) of time 0 of the profile's memory timelines
        (memory_timeline, peak_at): exact once a snapshot has given the engine's clock origin,
        else when the engine was about to start (it starts within milliseconds). Child
        processes' timelines are put on the main process's clock by the difference."""
        epoch, monotonic_ns = self._start_clock
        if self._origin_ns:
            return epoch + (self._origin_ns - monotonic_ns) / 1e9
        return epoch

    def _note_origin(self, snapshot: dict[str, Any]) -> None:
        self._origin_ns = (snapshot.get("memory") or {}).get("clock_origin_ns") or 0

    @property
    def started_at(self) -> str:
        """When profiling started, time 0 of the profile's times (start_epoch): UTC, ISO 8601."""
        return _utc_iso(self.start_epoch) if self._start_clock[0] else ""

    @property
    def elapsed_s(self) -> float:
        """Wall time from start() to stop()."""
        return self._wall_stop - self._wall_start

    @property
    def cpu_s(self) -> float:
        """The process's CPU time from start() to stop()."""
        return self._cpu_stop - self._cpu_start

    def raw_snapshot(self) -> dict[str, Any]:
        """The engine's snapshot (docs/engine-api.md), not yet a profile: what a child process
        writes for the main process to build and merge."""
        from heatline import _native

        with collector_paused():
            snapshot = _snapshot(_native)
            self._add_thread_names(snapshot)
        self._note_origin(snapshot)
        self._add_steps(snapshot)
        return snapshot

    def _add_thread_names(self, snapshot: dict[str, Any]) -> None:
        """The threads' names (threadnames.py) into the snapshot, as ``thread_names``."""
        if self._thread_names is not None:
            if self._running:
                self._thread_names.read_all()
            snapshot["thread_names"] = self._thread_names.names()

    def pause(self) -> None:
        if self._running:
            from heatline import _native

            _native.pause()

    def resume(self) -> None:
        if self._running:
            from heatline import _native

            _native.resume()

    def every(self, write_interval_s: float, callback: Any) -> None:
        """Call ``callback()`` in the main thread every ``write_interval_s`` seconds while
        sampling runs, the engine paused during the call (no thread is made: the sampler thread
        asks for it with Py_AddPendingCall). Cleared by stop()."""
        if self._running:
            from heatline import _native

            _native._set_periodic(write_interval_s, callback)

    def profile(self) -> dict[str, Any]:
        """The profile of the run so far (normally called after stop())."""
        with collector_paused():
            return self._profile()

    def _profile(self) -> dict[str, Any]:
        from heatline import _native
        from heatline.data.build import build_profile, host_name

        wall_stop = self._wall_stop if not self._running else time.perf_counter()
        cpu_stop = self._cpu_stop if not self._running else time.process_time()
        steal_stop = self._steal_stop if not self._running else machine_steal_s()
        steal_s = None
        if self._steal_start is not None and steal_stop is not None:
            steal_s = max(steal_stop - self._steal_start, 0.0)
        snapshot = _snapshot(_native)
        self._add_thread_names(snapshot)
        self._note_origin(snapshot)
        self._add_steps(snapshot)
        if self.snapshot_filter is not None:
            snapshot = self.snapshot_filter(snapshot)
        profile = build_profile(
            snapshot,
            program=self.program,
            argv=self._argv(),
            started_at=self.started_at,
            elapsed_s=wall_stop - self._wall_start,
            cpu_s=cpu_stop - self._cpu_start,
            sampling_interval_s=self.sampling_interval_s,
            steal_s=steal_s,
            cpu_count=os.cpu_count() or 1,
            host=host_name(),
            pid=os.getpid(),
            start_epoch=self.start_epoch if self._start_clock[0] else None,
        )
        profile["warnings"] += self._warnings
        return profile

    def _add_steps(self, snapshot: dict[str, Any]) -> None:
        """The step clock's marks into ``snapshot`` (``steps``), on the engine's clock: time 0
        is the engine's start, from the memory part's clock origin when it gives one, else
        the clock read just before the engine started (milliseconds before it, at most)."""
        if self.steps is not None:
            snapshot["steps"] = self.steps.record(self._origin_ns or self._start_clock[1])

    def _argv(self) -> list[str]:
        first = self.argv0() if self.argv0 is not None else None
        return self.argv if first is None else [first, *self.argv[1:]]


def _says_on(path: str) -> bool:
    """Whether the window file ``path`` says its window is open ("SEQ on")."""
    try:
        with open(path, "rb") as file:
            return file.read(64).split()[1:2] == [b"on"]
    except OSError:
        return False


class collector_paused:
    """Python's cyclic garbage collector off while heatline turns its results into a profile
    (``with collector_paused(): ...``), and back on after, if it was on before. Building the
    profile makes tens of thousands of small containers, enough to set off collections of
    every generation, and a full collection walks every object the program still holds: after
    ``import torch`` (about a million objects) those made up 90 ms of a run's 240 ms end.
    Nothing heatline makes there is cyclic garbage, so nothing is left for later but the
    program's own; a program that turns the collector off meanwhile from another thread
    finds it on again after."""

    def __enter__(self) -> None:
        self.was_on = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc_info: object) -> None:
        if self.was_on:
            gc.enable()


def machine_steal_s() -> float | None:
    """CPU time the hypervisor has taken from this machine's CPUs since boot (steal time, all
    CPUs summed), or None where the kernel does not say (not Linux, or no steal field). Read at
    start and stop only: a thread held up this way looks running from inside the machine, so
    heatline charges it as running, and the profile says how much there was."""
    try:
        with open("/proc/stat", "rb") as f:
            fields = f.readline().split()
        return int(fields[8]) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def _utc_iso(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(epoch)) + f".{int(epoch % 1 * 1000):03d}Z"


def fresh_stack_main(main: Any, *arguments: Any) -> tuple[Any, tuple[Any, ...]]:
    """What to call, and with what, to run the program as python runs its main module:
    ``main`` a code object is evaluated with ``arguments[0]`` as its globals (a script),
    anything else is called with ``arguments`` (runpy's ``_run_module_as_main``), in C, with
    heatline's frames set aside meanwhile. Under python the program's frames have none below
    them (``<module>``, or runpy's for ``-m``, is the bottom one); run from heatline's own
    frames they would see those: ``sys._getframe().f_back``, faulthandler's tracebacks, a
    recursion limit reached sooner, ``warnings.warn(stacklevel=...)`` naming heatline's files."""
    from heatline import _native

    return _native._run_on_fresh_stack, (main, *arguments)
