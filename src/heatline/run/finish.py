"""Finishing a run: the atexit handler that stops the engine, merges the children's profiles,
and writes the profile and the report (and the periodic writes of --write-interval), and the
os._exit wrapper that runs it first when the program leaves that way."""

from __future__ import annotations

import os
import sys

from heatline.engine.session import collector_paused
from heatline.options import Options
from heatline.run import collect
from heatline.run.errors import rearm_sigint_exit
from heatline.run.isolation import own_imports
from heatline.run.output import (
    internal_error,
    one_line,
    set_buffers_lost,
    stderr_fd,
    write_stderr,
)
from heatline.run.sigterm import terminating

# typing only for type checkers: a run's path imports none (heatline/__init__.py).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


# The exit status when the program succeeded but its profile could not be written.
WRITE_FAILED_STATUS = 1


class Finisher:
    """The atexit handler that stops the engine and writes the profile and report."""

    def __init__(self, session: Any, options: Options) -> None:
        self.session = session
        self.options = options
        self.server: Any = None  # the --pprof-server (heatline/serve.py), closed first
        self.succeeded = True  # False once the program's exit status is known to be non-zero
        self.interrupted = False  # the program ended by an uncaught KeyboardInterrupt
        # How the program ended, as a process's `exit` in the profile: "exit N" once launch.py
        # knows the status, "exit" while it does not.
        self.exit = "exit"
        self.warned = False  # --write-interval: a failed write was reported
        # Whether heatline knows the program's exit status (it ran the program: launch.py).
        # Not in a program the run was handed over to at an exec, which the interpreter runs
        # itself, nor when the run ends at an exec, whose program's status will be the
        # process's (handover.py): a failed write is then reported and the status left alone.
        self.status_known = True
        self.own_modules: dict[str, Any] = dict(sys.modules)  # sys.modules for heatline's work
        # A forked child inherits atexit handlers; only the profiled process may write.
        self.pid = os.getpid()

    def __call__(self) -> None:
        if os.getpid() != self.pid:
            return
        self.pid = -1  # once, whichever exit path comes first (atexit, os._exit, SIGTERM, exec)
        if not self.status_known and isinstance(getattr(sys, "last_value", None),
                                                KeyboardInterrupt):
            # The interpreter printed an uncaught KeyboardInterrupt (PyErr_Print sets
            # sys.last_value) and will die of SIGINT, unless building the report clears that.
            self.interrupted = True
        try:
            # No garbage collection while the profile is built, merged and written
            # (engine.session.collector_paused): the program's objects are not walked again.
            with own_imports(self.own_modules), collector_paused():
                self._finish()
        finally:
            collect.discard()  # merged already, unless building the profile failed
            if self.interrupted:
                rearm_sigint_exit()

    def _finish(self) -> None:
        try:
            if self.server is not None:  # --pprof-server: no request from now on
                self.server.close()
            self.session.stop()
            profile = self.session.profile()
            ended = ("SIGTERM" if terminating() else "SIGINT" if self.interrupted
                     else self.exit)
            profile = collect.collect(profile, self.session.start_epoch, ended)
            if self.options.use_virtual_time:
                from heatline.data.virtual_time import running_time_only

                running_time_only(profile)
            if self.options.outfile:
                if not self._write(profile, self.options.outfile):
                    return
            if not self.options.quiet:
                from heatline.renderers import View
                from heatline.renderers.terminal import print_report

                with stderr_fd() as stream:
                    print_report(profile, stream, View.of(self.options))
        except KeyboardInterrupt:
            internal_error("interrupted while writing the profile")
        except BaseException as exc:  # noqa: BLE001 -- never change the program's exit status
            internal_error(one_line(exc))

    def write_so_far(self) -> None:
        """--write-interval: write the profile of the run so far to -o, replacing the file
        whole. Called by the engine in the main thread, between two of the program's
        instructions, with the engine paused. A failure is one warning line and the program
        goes on; KeyboardInterrupt or SystemExit (from the program's own signal handlers,
        which may run meanwhile) is the program's and goes through."""
        if os.getpid() != self.pid:
            return
        try:
            with own_imports(self.own_modules):
                from heatline.renderers import View, render_to

                profile = self.session.profile()
                if self.options.use_virtual_time:
                    from heatline.data.virtual_time import running_time_only

                    running_time_only(profile)
                render_to(profile, self.options.format, self.options.outfile, View.of(self.options))
        except Exception as exc:  # noqa: BLE001 -- the program must go on
            if not self.warned:  # once: a full disk would otherwise say so every period
                self.warned = True
                reason = one_line(exc)
                write_stderr(f"heatline: warning: can't write the profile so far: {reason}\n")

    def _write(self, profile: Any, path: str) -> bool:
        """Write the profile; if that fails, say so in one line and, when the program itself
        succeeded, end the process with status 1 (the interpreter's exit status can no longer
        be changed from an atexit handler, so what is left of its shutdown is skipped)."""
        from heatline.renderers import View, render_to

        try:
            render_to(profile, self.options.format, path, View.of(self.options))
            return True
        except OSError as exc:
            reason = f"[Errno {exc.errno}] {exc.strerror}" if exc.strerror else one_line(exc)
            write_stderr(f"heatline: error: can't write the profile to '{path}': {reason}\n")
            if self.succeeded and self.status_known:
                os._exit(WRITE_FAILED_STATUS)
            return False



def wrap_os_exit(finisher: Finisher, real: dict[str, Any]) -> None:
    """os._exit in the run's main process (from the program, or from one of its atexit
    handlers, which run before heatline's) skips the atexit handler that writes the profile:
    the wrapper runs it first, without flushing the program's buffered output (os._exit loses
    it, as under python), then exits with the status given. A status the real os._exit
    refuses goes to it untouched, and the run goes on. ``real`` keeps the real function
    (carrier.real: a fork child's own wrapper calls it, follow.py)."""
    real_exit = real.setdefault("_exit", os._exit)

    def _exit(status: Any) -> Any:
        if finisher.pid == os.getpid() and exit_status_accepted(status):
            finisher.exit = f"os._exit({status})"
            finisher.succeeded = status == 0
            set_buffers_lost(True)
            try:
                finisher()
            finally:
                set_buffers_lost(False)
        return real_exit(status)

    os._exit = _exit


def exit_status_accepted(status: Any) -> bool:
    """Whether os._exit takes ``status`` (a C int) rather than raising."""
    return isinstance(status, int) and -(2**31) <= status < 2**31
