"""``heatline attach``'s side inside the attached process.

The agent library (_native/agent.c), loaded into the process by ``heatline attach``, imports
this module on a thread of its own, with the GIL, and calls :func:`act` twice: ``"start"`` at
once, ``"stop"`` when the attacher asks (its ``DIRECTORY/stop`` file). Everything goes through
files in the attach's private directory (mode 0700, made by the attacher):

- ``request`` (attacher): JSON, ``{"options": {dest: value}}``, the run options given to
  ``heatline attach`` (as ``Options``' fields, without -o, which the attacher writes).
- ``started`` (here): JSON, ``{"started_at": epoch seconds, "agent_tid": the kernel id of the
  agent's thread}``, once the profile runs.
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
import threading
import time
from typing import Any

_lock = threading.Lock()
_directory: str | None = None  # the attach in progress
_started_epoch = 0.0
_attached_pid = 0


def act(directory: str, action: str) -> None:
    """Start or stop the attached profile; never raises (an error goes to DIRECTORY/error)."""
    try:
        if action == "start":
            _start(directory)
        elif action == "stop":
            _finish(directory, "detach")
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
    global _directory, _started_epoch, _attached_pid
    from heatline import api
    from heatline.options import Options

    with open(os.path.join(directory, "request"), encoding="utf-8") as file:
        request = json.load(file)
    options = Options(**request["options"])
    with _lock:
        if _directory is not None:
            raise RuntimeError("heatline attach is already profiling this process")
        try:
            api._start(options)
        except api.HeatlineError as exc:
            raise RuntimeError(str(exc).split(";")[0]) from None
        _directory = directory
        _started_epoch = time.time()
        _attached_pid = os.getpid()
    atexit.register(_at_exit)
    # The agent's thread (this one) says who it is: the attacher waits at the detach until it
    # has ended, so that the process has only its own threads again when the command returns.
    _write(directory, "started", json.dumps({"started_at": _started_epoch,
                                             "agent_tid": threading.get_native_id()}))


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
    """Stop the profile and write it to DIRECTORY/profile.json."""
    global _directory
    from heatline import api
    from heatline.data import io, reshape

    with _lock:
        if _directory != directory:
            return  # stopped already (at exit, then the stop file; or the other way round)
        _directory = None
    atexit.unregister(_at_exit)
    data: dict[str, Any] = api.stop().data
    # This thread (the agent's, which started the profile and stops it) ran heatline's code
    # only: it is heatline's, not the program's, and leaves the threads table and the totals.
    reshape.without_threads(data, {threading.get_native_id()})
    data["attached"] = {"pid": os.getpid(), "started_at_epoch": _started_epoch,
                        "ended_by": ended_by}
    io.dump(data, os.path.join(directory, "profile.json"))
