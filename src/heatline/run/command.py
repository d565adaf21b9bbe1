"""Profiling any command: ``heatline -- CMD args`` (docs/design-running.md, "Running a
command").

heatline runs the command as its child, with its stdin, stdout and stderr, and with heatline's
two variables (carrier.py: ``HEATLINE_CHILD``, and ``PYTHONPATH`` with the hook directory
first) in its environment, where an exec'd Python child of a profiled program gets them only
in that exec's. Every process the command starts inherits them, through shells, make or a C
launcher; each Python interpreter among them runs heatline's start-up hook (run/_child/) and
profiles itself as a followed child does, writing its profile into the run directory; the hook
takes the variables out of that process's environment, so its own Python children are followed
through its exec wrappers, as any profiled process's. An interpreter heatline has no engine
for (another version, another implementation, a free-threaded build) only has its environment
put back (the config's ``engines``). heatline waits for the command, then merges what the
processes wrote (collect.py), the command as the processes table's root, and exits with the
command's status, or dies of the signal that killed it.

heatline's own process runs no program: its session, started paused, only gives the root's
clock (the processes' start times are measured from it) and an empty profile of the right
shape (memory on or off as the options say)."""

from __future__ import annotations

import os
import signal
import sys

from heatline.options import Options
from heatline.run import carrier as carriers
from heatline.run import collect
from heatline.run.output import internal_error, one_line, stderr_fd, write_stderr
from heatline.run.program import ProgramError, which

# typing only for type checkers.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# The role of the processes table's root (docs/profile-format.md).
ROLE = "command"
# Signals passed on to the command while it runs (SIGINT and SIGQUIT come from the terminal
# to the whole process group: the command has them already, and heatline waits for it).
FORWARDED = ("SIGTERM", "SIGHUP", "SIGUSR1", "SIGUSR2")
IGNORED = ("SIGINT", "SIGQUIT")
# The exit status when the command succeeded but its profile could not be written.
WRITE_FAILED_STATUS = 1


def find_command(name: str) -> str:
    """The file the command ``name`` runs (a shell's lookup: PATH for a name without a
    slash), or a ProgramError saying why there is none."""
    if os.sep in name:
        if not os.path.exists(name):
            raise ProgramError(f"no such command: '{name}'", 127)
        if os.path.isdir(name) or not os.access(name, os.X_OK):
            raise ProgramError(f"'{name}' is not an executable file", 126)
        return name
    found = which(name)
    if found is None:
        raise ProgramError(f"no command '{name}' on PATH", 127)
    return found


def label(argv: list[str]) -> str:
    """The command line, as the profile's ``program``: its words quoted as a shell reads them."""
    import shlex

    return " ".join(shlex.quote(word) for word in argv)


class CommandRun:
    """A command ready to run under heatline: ``run()`` runs it and returns the exit status."""

    def __init__(self, argv: list[str], options: Options) -> None:
        self.argv = argv
        self.options = options
        self.path = find_command(argv[0])

    def run(self) -> int:
        from heatline.engine.session import Session

        options = self.options
        arguments = dict(options.session_arguments(), paused=True, control=False, gpu=0)
        session = Session(program=label(self.argv), argv=self.argv, **arguments)
        try:
            session.start()
        except (RuntimeError, OSError) as exc:
            raise ProgramError(f"could not start the profiler: {exc}", 1) from None
        try:
            carrier = carriers.enable(options, None, None, session.start_epoch)
        except OSError as exc:
            session.stop()
            raise ProgramError(f"could not make the run directory: {exc}", 1) from None
        carrier.config["engines"] = [list(version) for version in carriers.engine_versions()]
        status = self._run_command(carrier)
        session.stop()
        ended = (f"exit {status}" if status >= 0 else _signal_name(-status))
        succeeded = status == 0
        try:
            self._finish(session, ended, succeeded, carrier)
        except _WriteFailed:
            if succeeded:
                return WRITE_FAILED_STATUS
        if status < 0:
            _die_of(-status)
            return 128 - status
        return status

    def _run_command(self, carrier: Any) -> int:
        """Run the command with heatline's variables in its environment; its exit status, or
        -N when signal N killed it."""
        import subprocess

        environment = {os.fsencode(key): value for key, value in os.environb.items()}
        environment.update(carrier.variables("python subprocess",
                                             environment.get(b"PYTHONPATH"), parent=0))
        try:
            child = subprocess.Popen(self.argv, executable=self.path, env=environment)
        except OSError as exc:
            collect.discard()
            raise ProgramError(f"can't run '{self.argv[0]}': {exc.strerror or exc}",
                               126) from None
        self.child = child
        previous = {}
        for name in IGNORED + FORWARDED:
            number = getattr(signal, name, None)
            if number is None:
                continue
            handler = signal.SIG_IGN if name in IGNORED else _forward(child)
            previous[number] = signal.signal(number, handler)
        try:
            return child.wait()
        finally:
            for number, handler in previous.items():
                signal.signal(number, handler)

    def _finish(self, session: Any, ended: str, succeeded: bool, carrier: Any) -> None:
        options = self.options
        try:
            profile = session.profile()
            # The root ran no Python here: no CPU time of its own, profiled throughout.
            profile["cpu_s"] = 0.0
            profile["paused"] = False
            profile["profiled_periods"] = [[0.0, profile["elapsed_s"]]]
            root = {"pid": self.child.pid, "ppid": os.getpid(), "role": ROLE,
                    "argv": list(self.argv), "program": label(self.argv)}
            profile = collect.collect(profile, session.start_epoch, ended, root=root)
            if options.use_virtual_time:
                from heatline.data.virtual_time import running_time_only

                running_time_only(profile)
            if options.outfile:
                from heatline.renderers import View, render_to

                try:
                    render_to(profile, options.format, options.outfile, View.of(options))
                except OSError as exc:
                    reason = (f"[Errno {exc.errno}] {exc.strerror}" if exc.strerror
                              else one_line(exc))
                    write_stderr(f"heatline: error: can't write the profile to "
                                 f"'{options.outfile}': {reason}\n")
                    raise _WriteFailed() from None
            if not options.quiet:
                from heatline.renderers import View
                from heatline.renderers.terminal import print_report

                with stderr_fd() as stream:
                    print_report(profile, stream, View.of(options))
        except _WriteFailed:
            raise
        except KeyboardInterrupt:
            internal_error("interrupted while writing the profile")
        except Exception as exc:  # noqa: BLE001 -- never change the command's exit status
            internal_error(one_line(exc))
        finally:
            collect.discard()


class _WriteFailed(Exception):
    """The profile could not be written to -o (said already)."""


def _forward(child: Any) -> Any:
    def forward(number: int, frame: Any) -> None:
        try:
            child.send_signal(number)
        except OSError:
            pass  # it has ended meanwhile

    return forward


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _die_of(number: int) -> None:
    """End this process by signal ``number``, as the command ended: a shell or a CI runner
    reading heatline's status sees what it would see of the command."""
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        signal.signal(number, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {number})
        os.kill(os.getpid(), number)
    except (OSError, ValueError):
        pass


__all__ = ["CommandRun", "find_command", "label"]
