"""Training steps' parts on their own: the step clock (engine/steps.py: the window's resume and
pause marks, explicit steps winning, one marking thread), the profile's ``steps``
(data/steps.py), the slow-steps rule's edges (data/summary.py), --steps' parser and the import
watch (integrations/torch_watch.py)."""

import sys
import threading

import pytest

from heatline.data import steps as step_report
from heatline.data.summary import STEP_MIN_EXTRA_S, STEP_RATIO, slow_steps
from heatline.engine.steps import EXPLICIT, OPTIMIZER, StepClock
from heatline.integrations import torch_watch
from heatline.api import HeatlineError, options_from_keywords


def _clock(window=None):
    calls = []
    clock = StepClock(window, lambda: calls.append(("resume", len(clock.marks))),
                      lambda: calls.append(("pause", len(clock.marks))))
    return clock, calls


def test_the_window_turns_profiling_on_at_mark_a_and_off_at_mark_b_plus_one():
    clock, calls = _clock((4, 6))
    for _ in range(10):
        clock.mark(EXPLICIT)
    # Step N runs from mark N to mark N + 1: steps 4-6 are marks 4 to 7.
    assert calls == [("resume", 4), ("pause", 7)]


def test_a_one_step_window():
    clock, calls = _clock((1, 1))
    for _ in range(3):
        clock.mark(OPTIMIZER)
    assert calls == [("resume", 1), ("pause", 2)]


def test_explicit_steps_win_over_the_optimizers():
    clock, calls = _clock((2, 3))
    for _ in range(3):
        clock.mark(OPTIMIZER)
    assert calls == [("resume", 2)]
    clock.mark(EXPLICIT)  # the optimizer's marks are dropped, and the window starts again
    assert clock.source == EXPLICIT and len(clock.marks) == 1
    assert calls == [("resume", 2), ("pause", 0)]
    clock.mark(OPTIMIZER)  # ignored from now on
    assert len(clock.marks) == 1
    clock.mark(EXPLICIT)
    assert calls[-1] == ("resume", 2)


def test_marks_from_another_thread_are_ignored_and_counted():
    clock, _ = _clock()
    clock.mark(EXPLICIT)
    other = threading.Thread(target=clock.mark, args=(EXPLICIT,))
    other.start()
    other.join()
    clock.mark(EXPLICIT)
    assert len(clock.marks) == 2 and clock.other_thread_calls == 1
    fields, warnings = step_report.from_record(clock.record(clock.marks[0]))
    assert fields["steps"]["count"] == 1
    assert warnings == ["1 step mark from threads other than the one that marked the first "
                        "step were ignored: steps are marked from one thread"]


def test_the_profiles_steps_from_the_marks():
    record = {"source": "heatline.step", "marks_ns": [1_000_000_000, 1_100_000_000,
                                                      1_300_000_000, 1_400_000_000],
              "window": None, "other_thread_calls": 0}
    steps = step_report.from_record(record)[0]["steps"]
    assert steps == {"source": "heatline.step", "count": 3, "started_s": [1.0, 1.1, 1.3],
                     "durations_s": [0.1, 0.2, 0.1], "median_s": 0.1,
                     "mean_s": pytest.approx(0.4 / 3), "min_s": 0.1, "max_s": 0.2,
                     "window": None}


def test_no_steps_without_marks_or_window():
    assert step_report.from_record({"source": None, "marks_ns": [], "window": None,
                                    "other_thread_calls": 0}) == ({}, [])
    fields, _ = step_report.from_record({"source": None, "marks_ns": [], "window": [2, 3],
                                         "other_thread_calls": 0})
    assert fields["steps"]["count"] == 0 and fields["steps"]["source"] is None


def test_slow_steps_edges():
    steady = [0.1] * 9
    assert slow_steps(steady + [0.1 * STEP_RATIO]) == ([], [9], 0.1)
    assert slow_steps(steady + [0.1 * STEP_RATIO - 0.001]) == ([], [], 0.1)
    # The floor: 3x a quick step is no sentence.
    quick = 0.01
    assert STEP_RATIO * quick - quick < STEP_MIN_EXTRA_S
    assert slow_steps([quick] * 9 + [quick * 4]) == ([], [], quick)
    # Warm-up: the leading slow steps; a later one is an outlier.
    assert slow_steps([1.0, 0.5] + steady + [0.9]) == ([0, 1], [11], 0.1)
    # Too few steps for a median to be the usual.
    assert slow_steps([0.1, 0.1, 0.1, 1.0]) == ([], [], 0.0)


@pytest.mark.parametrize("text, window", [("4:6", (4, 6)), ("1:1", (1, 1))])
def test_the_window_option(text, window):
    assert options_from_keywords({"steps": text}).steps == window


@pytest.mark.parametrize("text", ["6:4", "a:b", "4", "0:2", "4:", ":6", "1.5:3"])
def test_bad_windows(text):
    with pytest.raises(HeatlineError, match="^option steps: "):
        options_from_keywords({"steps": text})


def test_the_import_watch_fires_after_the_import_and_never_imports(tmp_path, monkeypatch):
    name = "heatline_watched_module_for_test"
    (tmp_path / f"{name}.py").write_text("VALUE = 42\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    seen = []
    torch_watch.when_imported(name, lambda module: seen.append(module.VALUE))
    assert seen == [] and name not in sys.modules
    try:
        __import__(name)
        assert seen == [42]
        __import__(name)
        assert seen == [42]  # once
        torch_watch.when_imported(name, lambda module: seen.append(-module.VALUE))
        assert seen == [42, -42]  # already imported: at once
    finally:
        sys.modules.pop(name, None)
    assert not any(type(finder).__module__ == torch_watch.__name__ for finder in sys.meta_path)


def test_a_failing_callback_does_not_fail_the_import(tmp_path, monkeypatch):
    name = "heatline_watched_module_failing"
    (tmp_path / f"{name}.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    torch_watch.when_imported(name, lambda module: 1 / 0)
    try:
        assert __import__(name).VALUE == 1
    finally:
        sys.modules.pop(name, None)


def test_the_chrome_trace_has_a_span_per_step():
    from heatline.renderers import chrome

    record = {"source": "optimizer", "marks_ns": [500_000_000, 600_000_000, 900_000_000],
              "window": [2, 2], "other_thread_calls": 0}
    profile = {"program": "train.py", "elapsed_s": 1.0,
               **step_report.from_record(record)[0]}
    events = [event for event in chrome.to_dict(profile)["traceEvents"]
              if event.get("cat") == "steps"]
    assert {event["tid"] for event in events} == {chrome.STEPS_TID}
    assert [(e["name"], e["ts"], e["dur"], e["args"]["profiled"]) for e in events] == [
        ("step 1", 500_000.0, pytest.approx(100_000.0), False),
        ("step 2", 600_000.0, pytest.approx(300_000.0), True)]
