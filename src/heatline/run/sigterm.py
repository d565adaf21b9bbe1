"""The SIGTERM guard: a profiled process killed by SIGTERM writes its profile first, while the
program sees SIGTERM exactly as under python (docs/design-running.md, "SIGTERM"). On a child's start
path: imports nothing beyond the interpreter's start-up."""

from __future__ import annotations

import os

# typing only for type checkers: a run's path imports none (heatline/__init__.py).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


_terminating = False  # set when this process is about to die of SIGTERM


def terminating() -> bool:
    """Whether this process is about to die of SIGTERM (its buffers are then not flushed)."""
    return _terminating


class SigtermGuard:
    """Write the profile when SIGTERM kills the program (a scheduler's timeout, ``kill``),
    then die of SIGTERM as python would, while the program sees SIGTERM exactly as under
    python.

    heatline's handler is installed only while the program's disposition for SIGTERM is the
    default one. ``signal.signal`` and ``signal.getsignal`` (the ``signal`` module calls the
    ``_signal`` functions replaced here, at each call) answer as if that disposition were
    SIG_DFL: the program installing its own handler gets SIG_DFL back and its handler runs as
    usual; setting SIG_DFL again puts heatline's back. A forked child gets the plain default.
    A Python-level handler runs when the main thread next runs Python code: a program stuck
    in a long C call dies when that call returns (python: at once); a C-level ``sigaction``
    handler would not have that delay (docs/design.md, known limits).

    CPython itself reads the disposition too: ``_thread.interrupt_main(SIGTERM)``
    (PyErr_SetInterruptEx) runs the Python handler without any signal, and does nothing when
    that handler is SIG_DFL. So the engine's C handler is chained in front of heatline's
    (sigterm.h): it notes each SIGTERM the kernel delivers, and heatline's handler, called
    when none came, does nothing, as SIG_DFL would.
    """

    def __init__(self, finisher: Any) -> None:
        import _signal

        self._module = _signal
        self._signal = _signal.signal
        self._getsignal = _signal.getsignal
        self.finisher = finisher
        self.armed = False
        self._arming = False  # between installing the handler and chaining the C one
        self._delivered: Any = None  # session.sigterm_delivered once chained

    def install(self, at_fork: bool = True) -> None:
        module = self._module
        if not hasattr(module, "SIGTERM") or not hasattr(os, "register_at_fork"):
            return
        try:
            if self._getsignal(module.SIGTERM) != module.SIG_DFL:
                return  # ignored (nohup, a parent's choice): nothing to do, as under python
            # Before the program runs no other thread takes signals (the sampler blocks them
            # all), so blocking SIGTERM here is enough: no check of what came meanwhile.
            self._arm(check=False)
        except (ValueError, OSError):  # not the main thread, or not allowed
            return
        self.armed = True
        module.signal, module.getsignal = self.signal, self.getsignal
        if at_fork:
            os.register_at_fork(after_in_child=self.in_child)

    def signal(self, signalnum: Any, handler: Any) -> Any:
        module = self._module
        if signalnum != module.SIGTERM:
            return self._signal(signalnum, handler)
        default = handler is module.SIG_DFL or (isinstance(handler, int) and handler == 0)
        if default:
            # The program's threads may take a SIGTERM while heatline's handler is back but
            # the C one not yet chained: check=True runs it then, as a delivered one.
            previous = self._arm(check=True)
        else:
            previous = self._signal(signalnum, handler)
        was_armed, self.armed = self.armed, default
        return module.SIG_DFL if was_armed else previous

    def _arm(self, check: bool) -> Any:
        """Install heatline's handler with the engine's C handler chained in front of it
        (sigterm.h), SIGTERM blocked in this thread meanwhile; returns the previous handler.
        A SIGTERM held by the block reaches the C handler once unblocked; one that another
        thread took in between reached Python's alone: with ``check``, the handlers of what
        came are run before this returns, while ``_arming`` makes it count as delivered."""
        module = self._module
        blocked = module.pthread_sigmask(module.SIG_BLOCK, {module.SIGTERM})
        self._arming = True
        try:
            try:
                previous = self._signal(module.SIGTERM, self._on_sigterm)
                self._delivered = None
                from heatline.engine import session

                if session.chain_sigterm():
                    self._delivered = session.sigterm_delivered
            finally:
                module.pthread_sigmask(module.SIG_SETMASK, blocked)
            if check:
                session.check_signals()
        finally:
            self._arming = False
        return previous

    def getsignal(self, signalnum: Any) -> Any:
        if signalnum == self._module.SIGTERM and self.armed:
            return self._module.SIG_DFL
        return self._getsignal(signalnum)

    def in_child(self) -> None:
        """In a forked child (run/follow.py): the plain default, and the signal module's own
        functions back."""
        module = self._module
        if self.armed:
            try:
                self._signal(module.SIGTERM, module.SIG_DFL)
            except (ValueError, OSError):
                pass
        self.armed = False
        module.signal, module.getsignal = self._signal, self._getsignal

    def _on_sigterm(self, signum: int, frame: Any) -> None:
        global _terminating
        delivered = self._delivered
        if not self._arming and delivered is not None and not delivered():
            # _thread.interrupt_main(SIGTERM): no signal came, and with SIG_DFL (what the
            # program sees) CPython's PyErr_SetInterruptEx does nothing.
            return
        module = self._module
        # Ignored while the profile is written (a second SIGTERM must not cut it short).
        self._signal(module.SIGTERM, module.SIG_IGN)
        if os.getpid() == self.finisher.pid:
            _terminating = True
            self.finisher.succeeded = False
            self.finisher()
            self.finisher.pid = -1  # written: the atexit handler must not write it again
        self._signal(module.SIGTERM, module.SIG_DFL)
        os.kill(os.getpid(), module.SIGTERM)

