"""Training steps: the boundaries a program marks (heatline.step(), or each PyTorch
``Optimizer.step()``), kept as clock readings, and the step window (--steps A:B) that turns
profiling on at one boundary and off at another.

A boundary is a mark; step N runs from the Nth mark to the (N+1)th, so K marks make K - 1
steps, and what runs before the first mark (imports, set-up; with optimizer steps, the first
iteration, which ends at the first Optimizer.step()) is no step. A mark costs a clock read
(time.monotonic_ns, the engine's CLOCK_MONOTONIC) and a list append, on the marking thread,
and nothing else: no I/O, no engine call, except the two marks where a window turns
profiling on (mark A) and off (mark B + 1).

Sources: heatline.step() calls win. Until the program calls heatline.step(), each
Optimizer.step() marks a boundary (torch's global post-hook,
torch.optim.optimizer.register_optimizer_step_post_hook, installed when the program imports
torch: integrations/torch_watch.py); at the first heatline.step() the optimizer's marks are
dropped and only heatline.step() marks from then on.

One thread marks: the first mark's thread. A mark from any other thread is ignored and
counted, and the profile says so once in its warnings (steps interleaved from several threads
have no order to be durations of)."""

from __future__ import annotations

import time
from _thread import get_ident  # threading's, without importing threading

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable

EXPLICIT = "heatline.step"
OPTIMIZER = "optimizer"



class StepClock:
    """One session's step boundaries. ``window``: (A, B), 1-based inclusive, or None; the
    session starts paused when there is one, and ``resume``/``pause`` turn it on at mark A and
    off at mark B + 1."""

    def __init__(self, window: tuple[int, int] | None, resume: Callable[[], None],
                 pause: Callable[[], None]) -> None:
        self.window = window
        self._resume = resume
        self._pause = pause
        self.marks: list[int] = []
        self.source: str | None = None
        self.thread: int | None = None
        self.other_thread_calls = 0
        self._on = False  # whether the window turned profiling on

    def mark(self, source: str) -> None:
        now = time.monotonic_ns()
        if source != self.source:
            if self.source == EXPLICIT:
                return  # explicit steps win over the optimizer's
            self._restart(source)
        thread = get_ident()
        if self.thread is None:
            self.thread = thread
        elif thread != self.thread:
            self.other_thread_calls += 1
            return
        marks = self.marks
        marks.append(now)
        window = self.window
        if window is not None:
            count = len(marks)
            if count == window[0]:
                self._on = True
                self._resume()
            elif count == window[1] + 1 and self._on:
                self._on = False
                self._pause()

    def _restart(self, source: str) -> None:
        """The first mark of ``source``: the marks of another source are dropped (and
        profiling the window had turned on for them is turned off again)."""
        self.source = source
        self.marks = []
        self.thread = None
        if self._on:
            self._on = False
            self._pause()

    def record(self, origin_ns: int) -> dict[str, Any]:
        """The snapshot's ``steps`` (data/build.py turns it into the profile's): marks in ns
        since ``origin_ns`` (the engine's start)."""
        return {
            "source": self.source,
            "marks_ns": [max(mark - origin_ns, 0) for mark in self.marks],
            "window": None if self.window is None else list(self.window),
            "other_thread_calls": self.other_thread_calls,
        }


def optimizer_hook(torch: Any, mark: Callable[[], None]) -> Any:
    """Have every torch Optimizer.step() call ``mark()``: the hook's handle (its remove()
    takes it out), or None where torch has no global step hook. Called once the program has
    imported torch (session.py's torch watch)."""
    import torch.optim.optimizer as optimizer  # torch is imported: this adds nothing new

    register_hook = getattr(optimizer, "register_optimizer_step_post_hook", None)
    return None if register_hook is None else register_hook(lambda *args: mark())
