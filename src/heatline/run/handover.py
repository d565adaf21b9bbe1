"""An exec in the run's main process (docs/design-running.md, "Running the program", exec).

Under python an exec replaces the program: nothing of it runs again, no atexit handler, no
flush. heatline keeps the run, and what ran before the exec, in one of two ways:

- **Handed over**, when the new program is a Python interpreter heatline follows
  (carrier.followable; not -E, -I or -S): the main process stops its session and writes it
  into the run directory as a child writes its profile, marked as a segment of the main
  process; its control files go with the stopped session. The exec then gets heatline's two
  variables with the role "main" and the run's options, and the new program, the same
  process, goes on with the run as its main process (:func:`continue_run`): control files,
  SIGTERM guard, the children's hooks, and at its end the run's profile, its own session
  merged with the segments as one process (data/merge.py merge_segments) and with the
  children, written to -o and reported.
- **Ended**, when it is any other program: the run's profile and report are written now
  (without flushing the program's buffers, which the exec loses as under python) and the run
  directory is removed; nothing of heatline's outlives the exec.

An exec of a path that is no executable file is left to fail as under python, touching
nothing (os.execvp tries every PATH entry that way). One that fails all the same resumes a
handed-over run with a fresh session (the segment stays in the run), or goes on unprofiled
after an ended one.
"""

from __future__ import annotations

import os
import sys
import time

from heatline.run import carrier as carriers
from heatline.run import collect, follow
from heatline.run.carrier import Carrier
from heatline.run.output import set_buffers_lost, write_stderr

# typing only for type checkers: a run's path imports none (heatline/__init__.py).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable


def before_exec(carrier: Carrier, path: Any, argv: Any,
                env: Any) -> tuple[Any, Callable[[], None]]:
    """In the run's main process, about to exec ``path``: the environment to exec with (None:
    the process's own) and what to call if the exec fails."""
    if not isinstance(path, int) and not _executable(path):
        return env, _nothing  # the exec fails as under python; the run goes on
    args = [path, *argv[1:]]
    if carrier.config["dir"] is not None and carriers.python_role(args) is not None:
        try:
            new_env = carrier.env_for(args, env, role="main")
            if isinstance(new_env, list):  # execve wants a mapping
                new_env = dict(entry.split(b"=", 1) for entry in new_env)
            failed = _hand_over(carrier)
        except Exception:  # noqa: BLE001 -- the part could not be written: end the run here
            pass
        else:
            return new_env, failed
    _end_run(carrier.main)
    return env, _nothing


def _executable(path: Any) -> bool:
    try:
        return os.path.isfile(path) and os.access(path, os.X_OK)
    except (TypeError, ValueError):
        return True  # not for heatline to judge: the exec itself says


def _nothing() -> None:
    pass


def _hand_over(carrier: Carrier) -> Callable[[], None]:
    """Stop the main session and write it into the run directory as a segment; returns what
    resumes the run in this process if the exec fails."""
    finisher = carrier.main
    session = finisher.session
    session.stop()  # also removes its control files: the new program makes them again
    snapshot = session.raw_snapshot()
    if session.snapshot_filter is not None:  # @profile: each segment keeps its marked lines
        snapshot = session.snapshot_filter(snapshot)
    token = f"{os.getpid()}-{time.monotonic_ns():x}"
    follow.write_profile(carrier.config["dir"], token, session, {
        "pid": os.getpid(), "ppid": os.getppid(), "role": "main", "exit": "exec",
        "start_epoch": session.start_epoch, "snapshot": snapshot, "segment": True,
    })
    carrier.written_segment = token  # the stopped session still holds it (collect.py)

    def resume() -> None:
        _start_main_session(carrier, finisher, session.program, session.argv,
                            session.snapshot_filter)
        carrier.written_segment = None  # the new session holds only what follows

    return resume


def _end_run(finisher: Any) -> None:
    """Write the run's profile and report now: the exec'd program is not followed."""
    set_buffers_lost(True)
    finisher.status_known = False  # the exec'd program's status will be the process's
    try:
        finisher()
    finally:
        set_buffers_lost(False)
    finisher.pid = -1  # done: an exec that fails after all goes on unprofiled


def _start_main_session(carrier: Carrier, finisher: Any, program: str, argv: Any,
                        snapshot_filter: Any) -> None:
    from heatline.engine.session import Session

    options = finisher.options
    session = Session(program=program, argv=argv, **options.session_arguments())
    session.snapshot_filter = snapshot_filter
    session.start()
    finisher.session = session
    carrier.main_epoch = session.start_epoch
    if options.write_interval_s is not None and options.outfile:
        session.every(options.write_interval_s, finisher.write_so_far)


def continue_run(config: dict[str, Any]) -> None:
    """In the Python program the run's main process exec'd, as it starts (heatline/run/_child/
    sitecustomize.py, for the role "main"): go on with the run as its main process, as
    launch.start begins it. The program itself is run by the interpreter, as under python."""
    import atexit
    import builtins

    from heatline.engine import marked
    from heatline.options import Options
    from heatline.run import isolation
    from heatline.run.finish import Finisher, wrap_os_exit
    from heatline.run.sigterm import SigtermGuard

    carrier = Carrier(config)
    options = Options(**config["main"]["options"])
    finisher = Finisher(None, options)
    # sys.modules for heatline's work at exit, without the program's __main__ (a reference
    # here would keep its globals alive past the interpreter's shutdown).
    finisher.own_modules.pop("__main__", None)
    finisher.status_known = False
    # isolation.OWN_PATH, sys.path for heatline's imports at exit, was taken here without
    # heatline's own directory (first while the hook runs): heatline must import from it.
    root = carrier.config["root"]
    if root not in isolation.OWN_PATH:
        isolation.OWN_PATH.append(root)
    marked.install(builtins)  # @profile, as under the command
    carrier.main, carrier.main_exec = finisher, before_exec
    carriers.adopt(carrier)
    try:
        _start_main_session(carrier, finisher, follow.program_label(), list(sys.argv),
                            marked.keep_marked)
    except (RuntimeError, OSError) as exc:  # as launch.start: the engine could not start
        collect.discard()  # nothing of the run may be left behind
        write_stderr(f"heatline: error: could not go on profiling after the exec: {exc}; "
                     "the run's profile is lost\n")
        return
    atexit.register(finisher)
    SigtermGuard(finisher).install()
    wrap_os_exit(finisher, carrier.real)
    follow.install(carrier)  # its fork hook must run after the guard's (in a child)
