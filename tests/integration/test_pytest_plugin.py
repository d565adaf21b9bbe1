"""The pytest plugin (heatline/integrations/pytest_plugin.py), run as a user runs it: pytest
in its own process (pytester), finding the plugin through its pytest11 entry point."""

import json
import os
import re
import subprocess
import sys

import pytest

from heatline import data as profile_format

# Imported here, before pytester snapshots sys.modules (it drops what was imported later, and
# numpy cannot be imported twice in one process).
pytest.importorskip("numpy")
pytest_plugins = ["pytester"]

BUDGETS = """\
import time

import numpy as np
import pytest

KEPT = []


@pytest.mark.heatline_limit(peak="50 MB")
def test_over_peak():
    big = np.ones(100 * 2**20 // 8)  # the culprit: 100 MiB
    small = np.ones(2**20 // 8)
    del big, small


@pytest.mark.heatline_limit(peak="200 MB", leaks="50 MB", time_s=60)
def test_within_budget():
    data = np.ones(20 * 2**20 // 8)
    KEPT.append(np.ones(2**20 // 8))
    del data


@pytest.mark.heatline_limit(time_s=0.1)
def test_over_time():
    time.sleep(0.5)  # the slow line


@pytest.mark.heatline_limit(leaks="10 MB")
def test_keeps_memory():
    KEPT.append(np.ones(40 * 2**20 // 8))  # kept after the test
"""

# The line of each comment that marks a line responsible.
LINE = {tag: number for number, text in enumerate(BUDGETS.splitlines(), 1)
        for tag in ("the culprit", "the slow line", "kept after") if f"# {tag}" in text}


@pytest.fixture
def budgets(pytester):
    pytester.makepyfile(test_budgets=BUDGETS)
    return pytester


def test_budgets_fail_naming_the_lines_responsible(budgets):
    result = budgets.runpytest_subprocess("--strict-markers", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=3)
    out = result.stdout.str()
    result.stdout.fnmatch_lines([
        "*_ test_over_peak _*",
        "heatline_limit: peak memory 1* MiB is over the limit of 50.0 MiB; most held by *",
    ])
    # The message names the culprit line first, with what it held (the array exactly, plus
    # the line's small allocations, which are sampled: one sample adds 64 KiB).
    for pattern in (
        rf"held by test_budgets.py:{LINE['the culprit']} \(test_over_peak\) held 100\.[01] MiB",
        rf"time in test_budgets.py:{LINE['the slow line']} \(test_over_time\) \d+\.\d\d s",
        rf"kept by test_budgets.py:{LINE['kept after']} \(test_keeps_memory\) kept 40\.[01] MiB",
    ):
        assert re.search(pattern, out), (pattern, out)
    assert not os.path.exists(budgets.path / ".heatline")  # no --heatline: no files


def test_heatline_option_writes_a_profile_per_test(budgets):
    result = budgets.runpytest_subprocess("--heatline", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=3)
    directory = budgets.path / ".heatline"
    names = sorted(os.listdir(directory))
    assert len(names) == 4, names
    # It says where they went, with a command that shows one.
    result.stdout.fnmatch_lines(["heatline: 4 profiles written to .heatline/ (one per test); "
                                 "see one with: heatline view .heatline/test_budgets.py_*.json"])
    for name in names:
        data = profile_format.load(str(directory / name))  # a valid profile file
        assert str(budgets.path / "test_budgets.py") in data["files"]
    (over_peak,) = [name for name in names if "test_over_peak" in name]
    data = json.loads((directory / over_peak).read_text())
    assert data["peak_bytes"] >= 100 * 2**20
    # The profile is the test's, not pytest's launcher's: its header names the test.
    assert data["program"] == f"{budgets.path / 'test_budgets.py'}::test_over_peak"
    header = subprocess.run([sys.executable, "-m", "heatline", "view", str(directory / over_peak)],
                            capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"})
    assert f"profile of {budgets.path / 'test_budgets.py'}::test_over_peak" in header.stdout, \
        header.stdout
    other = budgets.runpytest_subprocess("--heatline=elsewhere", "-k", "within", "-p",
                                         "no:cacheprovider")
    other.assert_outcomes(passed=1, deselected=3)
    assert len(os.listdir(budgets.path / "elsewhere")) == 1


def test_a_test_file_that_does_not_ask_is_unaffected(pytester):
    pytester.makepyfile(test_plain="""
        import sys

        def test_plain():
            assert "heatline.api" not in sys.modules
            assert "heatline._native" not in sys.modules
    """)
    result = pytester.runpytest_subprocess("--strict-markers", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert not os.path.exists(pytester.path / ".heatline")


def test_a_bad_limit_is_a_usage_error(pytester):
    pytester.makepyfile(test_bad="""
        import pytest

        @pytest.mark.heatline_limit(peak="lots")
        def test_bad():
            pass
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["heatline_limit: must be a size in bytes*'lots'"])
