"""The leak rule and the timeline helpers (heatline/data/memory.py) on synthetic timelines
whose verdict is known by construction."""

import pytest

from heatline.data import memory as mr
from heatline.renderers.terminal import sparkline

# Nothing checked here depends on the CPython version: runs on the main CPython and under ASan,
# not on every version (Makefile, suite-3.X).
pytestmark = pytest.mark.interpreter_independent

MB = 1_000_000


def _leak(timeline, *, end_s, samples=50):
    peak = max(v for _, v in timeline)
    return mr.leak_of(
        timeline, peak=peak, live_end=timeline[-1][1], surviving_samples=samples, end_s=end_s
    )


def test_steady_growth_over_the_run_is_a_leak_with_its_rate():
    timeline = [[0.1 * i, i * MB] for i in range(1, 51)]  # +10 MB/s for 5 s
    leak = _leak(timeline, end_s=5.0)
    assert leak is not None and leak["likelihood"] >= 0.9
    assert abs(leak["growth_bytes_per_s"] - 10 * MB) < 0.5 * MB


def test_one_buffer_kept_for_the_whole_run_is_not_a_leak():
    assert _leak([(0.01, 100 * MB)], end_s=5.0) is None


def test_a_structure_built_in_a_burst_then_kept_is_not_a_leak():
    burst = [(0.5 + 0.01 * i, i * MB) for i in range(1, 31)]  # built in 0.3 s of a 5 s run
    assert _leak(burst, end_s=5.0) is None


def test_a_freed_temporary_is_not_a_leak():
    timeline = [[0.1 * i, i * MB] for i in range(1, 31)] + [[3.1, 0]]
    assert _leak(timeline, end_s=5.0) is None


def test_oscillating_temporaries_are_not_a_leak():
    timeline = [[0.05 * i, (8 if i % 2 else 16) * MB] for i in range(1, 100)]
    assert _leak(timeline, end_s=5.0) is None


def test_too_few_surviving_samples_is_not_evidence():
    timeline = [[1.0, MB], [2.0, 2 * MB], [3.0, 3 * MB]]
    assert _leak(timeline, end_s=3.5, samples=2) is None


def test_sum_of_timelines_is_a_step_function_sum():
    a = [[1.0, 10], [3.0, 0]]
    b = [[2.0, 5]]
    assert mr.sum_timelines([a, b]) == [[1.0, 10], [2.0, 15], [3.0, 5]]


def test_decimate_bounds_points_and_keeps_the_peak_and_the_end():
    timeline = [[i * 0.001, i % 1000] for i in range(10_000)]
    timeline[5_432] = [5.432, 10**9]
    kept = mr.decimate(timeline, 50)
    assert len(kept) <= 51
    assert [5.432, 10**9] in kept
    assert kept[-1] == timeline[-1]


def test_function_fields_take_the_peak_of_the_sum():
    line_a = {**mr.empty_fields(), "alloc_python_bytes": 10, "timeline": [[1.0, 10], [2.0, 0]]}
    line_b = {
        **mr.empty_fields(),
        "alloc_native_bytes": 7,
        "timeline": [[3.0, 7]],
        "growth_bytes": 7,
    }
    fields = mr.function_fields([line_a, line_b], end_s=4.0)
    assert fields["peak_bytes"] == 10  # not 17: the two never coexisted
    assert fields["alloc_python_bytes"] == 10 and fields["alloc_native_bytes"] == 7
    assert fields["growth_bytes"] == 7


def test_sparkline_shows_each_slice_maximum():
    assert sparkline([[0.0, 0], [0.55, 100], [0.6, 0]], 1.0, width=4) == "  █ "
    assert sparkline([], 1.0) == ""
