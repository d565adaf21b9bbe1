"""Every reader that adds up a line's, stack's or function's time counts the waits for a CPU
(cpu_wait_s) with python, native and system: a line's time is all four, so shares and totals
still add up to the profile's attributed time on an oversubscribed machine."""

import io

import pytest

from heatline.data import diff
from heatline.data.queries import cut_stacks, inclusive_times, stacks
from heatline.data.reshape import without_threads
from heatline.data.window import between

pytestmark = pytest.mark.interpreter_independent


def _line(number, python_s, cpu_wait_s, total_s):
    return {"line": number, "source": f"work({number})", "function": "work",
            "python_s": python_s, "native_s": 0.0, "system_s": 0.0, "cpu_wait_s": cpu_wait_s,
            "python_pct": round(100 * python_s / total_s, 3), "native_pct": 0.0,
            "system_pct": 0.0, "cpu_wait_pct": round(100 * cpu_wait_s / total_s, 3)}


def _profile(python_s, cpu_wait_s):
    """One function, one line, one stack: python_s on a CPU, cpu_wait_s waiting for one."""
    total = python_s + cpu_wait_s
    line = _line(3, python_s, cpu_wait_s, total)
    function = {"qualname": "work", "name": "work", "first_line": 2,
                **{k: v for k, v in line.items() if k.endswith(("_s", "_pct"))}}
    return {
        "elapsed_s": total, "sampling_interval_s": 0.01,
        "threads": [{"native_id": 100, "main": True, "python_s": python_s, "native_s": 0.0,
                     "system_s": 0.0, "cpu_wait_s": cpu_wait_s, "unattributed_s": 0.0}],
        "totals": {"python_s": python_s, "native_s": 0.0, "system_s": 0.0,
                   "cpu_wait_s": cpu_wait_s, "attributed_s": total, "unattributed_s": 0.0},
        "files": {"/app.py": {"python_s": python_s, "native_s": 0.0, "system_s": 0.0,
                              "cpu_wait_s": cpu_wait_s, "lines": [line],
                              **{k: v for k, v in line.items() if k.endswith("_pct")},
                              "functions": [function]}},
        "stacks": {"frames": [{"file": "/app.py", "name": "work", "qualname": "work",
                               "line": 3}],
                   "entries": [{"stack": [0], "thread": 0, "python_s": python_s,
                                "native_s": 0.0, "system_s": 0.0, "cpu_wait_s": cpu_wait_s}],
                   "dropped_s": 0.0},
    }


def test_stacks_inclusive_time_and_cut_stacks_count_the_waits():
    profile = _profile(1.0, 3.0)
    [stack] = list(stacks(profile))
    assert stack.cpu_wait_s == 3.0 and stack.total_s == pytest.approx(4.0)
    assert inclusive_times(profile)[("/app.py", "work")] == pytest.approx(4.0)
    assert cut_stacks(profile).total_s == pytest.approx(4.0)


def test_a_profile_without_waits_reads_them_as_zero():
    profile = _profile(1.0, 0.0)
    del profile["stacks"]["entries"][0]["cpu_wait_s"]
    assert inclusive_times(profile)[("/app.py", "work")] == pytest.approx(1.0)


def test_diff_counts_the_waits_and_shows_them_only_where_there_are_some():
    before, after = _profile(1.0, 0.0), _profile(1.0, 3.0)
    result = diff.compare(before, after)
    [row] = result["functions"]
    assert sum(row[3][:4]) == pytest.approx(3.0)  # the function's time grew by the waits
    assert "work: 1.000s -> 4.000s" in diff.regressions(result, 50)
    out = io.StringIO()
    diff.report(result, out)
    assert "cpu wait" in out.getvalue() and "+3.000s" in out.getvalue()
    plain = io.StringIO()
    diff.report(diff.compare(_profile(1.0, 0.0), _profile(2.0, 0.0)), plain)
    assert "cpu wait" not in plain.getvalue()


def test_window_and_thread_filter_keep_the_waits():
    before, after = _profile(1.0, 1.0), _profile(2.0, 3.0)
    [entry] = between(before, after)["stacks"]["entries"]
    assert (entry["python_s"], entry["cpu_wait_s"]) == pytest.approx((1.0, 2.0))
    # A thread that only waited for a CPU at a user line charged time there: it is kept.
    waiting = _profile(0.0, 2.0)
    assert len(without_threads(waiting, {100})["threads"]) == 1


def test_html_page_counts_the_waits_and_gives_them_columns_only_where_there_are_some():
    from heatline.renderers.html import page_data

    data = page_data(_profile(1.0, 3.0))
    assert data["cpu_wait"] is True
    [entry] = data["files"]
    assert entry["pct"] == pytest.approx(100.0)  # python 25% + waiting for a CPU 75%
    assert entry["lines"][0][13] == pytest.approx(75.0)
    [function] = data["functions"]
    assert function[-1] == pytest.approx(75.0)  # the column after copy
    [thread] = data["threads"]
    assert thread[-1] == 3.0
    # The flame graph's root: 4 s, of which 3 s waiting for a CPU.
    assert data["flame"][1] == pytest.approx(4.0) and data["flame"][3][3] == pytest.approx(3.0)
    plain = page_data(_profile(1.0, 0.0))
    assert plain["cpu_wait"] is False
    assert len(plain["functions"][0]) == 9 and len(plain["threads"][0]) == 6


def test_pprof_has_a_cpu_wait_sample_type():
    from heatline.renderers import pprof

    assert ("cpu_wait", "nanoseconds") in pprof.TIME_TYPES
    encoded = pprof.encode(_profile(1.0, 3.0))
    assert b"cpu_wait" in encoded
