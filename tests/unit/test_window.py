"""data/window.py: a window's stacks are the later profile's minus the earlier one's, matched by
thread and frames (not by either profile's frame indexes, which differ between two builds)."""

import pytest

from heatline.data.window import between

# Nothing checked here depends on the CPython version: runs on the main CPython and under ASan,
# not on every version (Makefile, suite-3.X).
pytestmark = pytest.mark.interpreter_independent


def _profile(elapsed_s, frames, entries):
    return {"elapsed_s": elapsed_s, "sampling_interval_s": 0.01,
            "threads": [{"native_id": 100, "main": True}, {"native_id": 200}],
            "stacks": {"frames": frames, "entries": entries}}


def _frame(name, line):
    return {"file": "/app.py", "name": name, "qualname": name, "line": line}


def test_each_stack_keeps_only_the_windows_time():
    main, hot, idle = _frame("<module>", 9), _frame("hot", 3), _frame("idle", 6)
    before = _profile(1.0, [main, hot, idle], [
        {"stack": [0, 1], "thread": 0, "python_s": 0.8, "native_s": 0.1, "system_s": 0.0},
        {"stack": [2], "thread": 1, "python_s": 0.0, "native_s": 0.0, "system_s": 1.0},
    ])
    # Built again later: the frame table in another order, a new stack, the idle one unchanged.
    after = _profile(3.0, [idle, hot, main, _frame("new", 12)], [
        {"stack": [2, 1], "thread": 0, "python_s": 2.5, "native_s": 0.3, "system_s": 0.0},
        {"stack": [0], "thread": 1, "python_s": 0.0, "native_s": 0.0, "system_s": 1.0},
        {"stack": [2, 3], "thread": 0, "python_s": 0.2, "native_s": 0.0, "system_s": 0.0},
    ])
    window = between(before, after)
    assert window["elapsed_s"] == pytest.approx(2.0)
    frames = window["stacks"]["frames"]
    got = {tuple(frames[i]["qualname"] for i in e["stack"]): (e["python_s"], e["native_s"],
                                                               e["system_s"])
           for e in window["stacks"]["entries"]}
    assert got == {("<module>", "hot"): pytest.approx((1.7, 0.2, 0.0)),
                   ("<module>", "new"): pytest.approx((0.2, 0.0, 0.0))}


def test_the_same_frames_on_another_thread_are_another_stack():
    hot = _frame("hot", 3)
    before = _profile(1.0, [hot], [
        {"stack": [0], "thread": 0, "python_s": 1.0, "native_s": 0.0, "system_s": 0.0}])
    after = _profile(2.0, [hot], [
        {"stack": [0], "thread": 0, "python_s": 1.0, "native_s": 0.0, "system_s": 0.0},
        {"stack": [0], "thread": 1, "python_s": 0.5, "native_s": 0.0, "system_s": 0.0}])
    entries = between(before, after)["stacks"]["entries"]
    assert [(e["thread"], e["python_s"]) for e in entries] == [(1, 0.5)]
