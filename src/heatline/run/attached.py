"""``heatline attach``'s side inside the attached process.

The agent's code (_native/agent.c) imports this module and calls :func:`act` with
``"start"``: on a thread of its own, with the GIL, when ``heatline attach`` loaded the agent
library into the process (that thread then ends); on the program's main thread, at a safe
point, when it came through ``sys.remote_exec`` (CPython 3.14+, PEP 768). The stop is the
engine's to notice (_native/detach.h): its sampler thread looks for the attacher's
``DIRECTORY/stop`` (or the directory gone) and starts a short-lived thread that calls
``act(DIRECTORY, "stop")``. So while attached the program has no thread of
heatline's but the sampler, which the engine takes out of the program's forks. Everything goes
through files in the attach's private directory (mode 0700, made by the attacher):

- ``claimed`` (the agent's code): how the attach came in, ``agent`` or ``remote_exec``, written
  by the first of the two to run (the other then does nothing).
- ``request`` (attacher): JSON, ``{"options": {dest: value}}``, the run options given to
  ``heatline attach`` (as ``Options``' fields, without -o, which the attacher writes).
- ``started`` (here): JSON, ``{"started_at": epoch seconds, "agent_tid": the kernel id of the
  agent's thread (null through remote_exec: the thread is the program's), "pprof_url": the
  --pprof-server's address or null}``, once the profile runs.
- ``children/`` (attacher): where the children the program starts while attached write their
  profiles (run/follow.py's follow_attached; the attacher merges them: run/collect.py).
- ``stopping`` (here): JSON, ``{"tid": the kernel id of the thread that stops the profile}``,
  written before ``profile.json`` at a detach: the attacher waits until both threads ended.
- ``process`` (here): JSON, ``{"start_epoch", "ppid", "heatline_tids"}``: the time 0 of the
  profile's timelines (the children's start_s count from it), the process's parent, and the
  threads of heatline's that ran in it (the attacher waits until they have ended). Written
  just before ``profile.json``.
- ``profile.json`` (here): the profile, written at the stop, or at the program's exit when it
  ends while attached (``attached.ended_by``: ``"exit"``).
- ``error`` (here): one line, when something failed (the attacher shows it and exits 1).

The profile is taken with the API's own start/stop (api.py), so an attach is exactly a
``heatline.start()`` ... ``heatline.stop()`` the program did not have to write. Nothing of it is
left running after the stop: no thread, no atexit handler, the engine's hooks removed by its
stop. The modules imported stay in ``sys.modules``.
"""

from __future__ import annotations

import atexit
import json
import os
import sys
import threading
import time

# typing only for the annotations (strings here), as on a run's own path: in the program
# attached to, every import of the start competes for the GIL with the program's threads.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_lock = threading.Lock()
_directory: str | None = None  # the attach in progress
_started_epoch = 0.0
_attached_pid = 0
_method = "agent"  # how the attach came in: DIRECTORY/claimed
_heatline_tids: set[int] = set()  # the agent's thread and the stopping one: heatline's
_carrier: Any = None  # run/carrier.py's Carrier following the children while attached
# The program's GIL switch interval, which the attacher shortens while heatline's thread starts
# and stops the profile (engine/switching.py), in seconds; None: not shortened.
_switch_interval_s: float | None = None


def _restore_switching() -> None:
    """Put the program's switch interval back as soon as heatline's thread is done (the
    attacher does too, later): unless the program set one of its own meanwhile."""
    if _switch_interval_s is not None:
        from heatline.engine import switching

        switching.put_back(_switch_interval_s)


def act(directory: str, action: str) -> None:
    """Start or stop the attached profile; never raises (an error goes to DIRECTORY/error).
    The start runs under the agent's fork guard (agent.c, which takes it); the stop takes it
    here: a fork of the program's waits until the stopping thread is done and gone."""
    try:
        if action == "start":
            try:
                _start(directory)
            finally:
                _restore_switching()
        elif action == "stop":
            guard = sys.modules.get("_heatline_attach_guard")
            if guard is None:
                _finish(directory, "detach")
            else:
                with guard.lock:
                    guard.tids.add(threading.get_native_id())
                    _finish(directory, "detach")
            _restore_switching()
    except BaseException as exc:  # noqa: BLE001 -- nothing may reach the program
        _write(directory, "error", _one_line(exc))


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text or type(exc).__name__


def _write(directory: str, name: str, text: str) -> None:
    """DIRECTORY/name, whole or not at all (written under another name, then renamed)."""
    temporary = os.path.join(directory, f".{name}.tmp")
    try:
        with open(temporary, "w", encoding="utf-8") as file:
            file.write(text)
        os.replace(temporary, os.path.join(directory, name))
    except OSError:
        pass  # the attacher then says it got no answer


def _start(directory: str) -> None:
    global _directory, _started_epoch, _attached_pid, _switch_interval_s, _carrier, _method
    with open(os.path.join(directory, "request"), encoding="utf-8") as file:
        request = json.load(file)
    with open(os.path.join(directory, "claimed"), encoding="utf-8") as file:
        method = file.read()
    previous = request.get("switch_interval_us")
    _switch_interval_s = None if previous is None else previous / 1e6
    from heatline import api
    from heatline.engine import attach
    from heatline.options import Options

    options = Options(**request["options"])
    with _lock:
        if _directory is not None:
            raise RuntimeError("heatline attach is already profiling this process")
        try:
            api.start_with_options(options, announce=False)
        except api.HeatlineError as exc:
            raise RuntimeError(str(exc).split(";")[0]) from None
        run = api.current_run()
        children = os.path.join(directory, "children")
        if not options.no_children and os.path.isdir(children):
            from heatline.run import follow

            try:
                _carrier = follow.follow_attached(children, options.session_arguments(),
                                                  run.session.start_epoch)
            except BaseException:
                api.stop()
                raise
        _directory = directory
        _started_epoch = time.time()
        _attached_pid = os.getpid()
        _method = method
        _heatline_tids.clear()
        if method == "agent":  # else the program's main thread, which goes on with its work
            _heatline_tids.add(threading.get_native_id())
    atexit.register(_at_exit)
    # From now on the engine's sampler watches for the stop (or the attacher gone).
    attach.watch_for_detach(directory, lambda: act(directory, "stop"))
    # The agent's thread (this one) says who it is: the attacher waits at the detach until it
    # has ended, so that the process has only its own threads again when the command returns.
    server = run.server
    _write(directory, "started", json.dumps({
        "started_at": _started_epoch,
        "agent_tid": threading.get_native_id() if method == "agent" else None,
        "pprof_url": None if server is None else server.url}))


def _at_exit() -> None:
    directory = _directory
    # A forked child inherits this handler and _directory, but not the profile (the engine
    # stops in a fork child): only the attached process writes.
    if directory is not None and os.getpid() == _attached_pid:
        act_at_exit(directory)


def act_at_exit(directory: str) -> None:
    try:
        _finish(directory, "exit")
    except BaseException as exc:  # noqa: BLE001 -- the program's exit must go on
        _write(directory, "error", _one_line(exc))


def _finish(directory: str, ended_by: str) -> None:
    """Stop the profile and write it to DIRECTORY/profile.json.

    The whole of it runs under the lock: a program that exits while the stop is under way
    (its at-exit handler waiting here) lets the stopping thread write the profile before the
    interpreter finalises, which would end that thread wherever it stood."""
    global _directory, _carrier
    from heatline import api
    from heatline.data import io, reshape

    with _lock:
        if _directory != directory:
            return  # stopped already (at exit, then the stop file; or the other way round)
        _directory = None
        atexit.unregister(_at_exit)
        if _carrier is not None:  # children started from now on are not followed
            from heatline.run import follow

            follow.unfollow_attached(_carrier)
            _carrier = None
        if ended_by == "detach":
            _heatline_tids.add(threading.get_native_id())
            _write(directory, "stopping", json.dumps({"tid": threading.get_native_id()}))
        run = api.current_run()
        data: dict[str, Any] = api.stop().data
        # The agent's thread (which started the profile), the one stopping it and the pprof
        # server's ran heatline's code only: they are heatline's, not the program's, and
        # leave the threads table and the totals.
        tids = set(_heatline_tids)
        if run is not None and run.server is not None:
            tids |= run.server.native_ids
        reshape.without_threads(data, tids)
        data["attached"] = {"pid": os.getpid(), "started_at_epoch": _started_epoch,
                            "ended_by": ended_by, "method": _method}
        _write(directory, "process", json.dumps({
            "start_epoch": None if run is None else run.session.start_epoch,
            "ppid": os.getppid(), "heatline_tids": sorted(tids)}))
        io.dump(data, os.path.join(directory, "profile.json"))
