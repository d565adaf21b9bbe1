"""heatline.units: the one parser of sizes and durations (options, pytest plugin, budgets)."""

import pytest

from heatline.units import format_size, parse_seconds, parse_size

# Nothing checked here depends on the CPython version: runs on the main CPython and under ASan,
# not on every version (Makefile, suite-3.X).
pytestmark = pytest.mark.interpreter_independent

KIB, MIB, GIB = 1 << 10, 1 << 20, 1 << 30


@pytest.mark.parametrize("text, expected", [
    ("512", 512), (512, 512), ("512k", 512 * KIB), ("64K", 64 * KIB), ("64 KB", 64 * KIB),
    ("64KiB", 64 * KIB), ("200 MB", 200 * MIB), ("200mb", 200 * MIB), ("1.5GiB", 3 * GIB // 2),
    ("1.5 g", 3 * GIB // 2), ("2T", 2 << 40), ("10B", 10), (" 7 ", 7), ("0", 0), (1e3, 1000),
])
def test_sizes(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("text", ["", "MB", "lots", "-1k", "1x", "nan", "inf", "1e400", True,
                                  "1 2 MB"])
def test_bad_sizes_name_the_value(text):
    with pytest.raises(ValueError, match=repr(text).replace("(", r"\(").replace(")", r"\)")):
        parse_size(text)


@pytest.mark.parametrize("text, expected", [
    ("2.5", 2.5), (2.5, 2.5), (3, 3.0), ("250ms", 0.25), ("30s", 30.0), ("30 s", 30.0),
    ("2m", 120.0), ("1.5h", 5400.0), ("0", 0.0),
])
def test_durations(text, expected):
    assert parse_seconds(text) == pytest.approx(expected)


@pytest.mark.parametrize("text", ["", "s", "soon", "-1", "nan", "inf", False])
def test_bad_durations(text):
    with pytest.raises(ValueError):
        parse_seconds(text)


def test_format_size():
    assert [format_size(v) for v in (0, 512, 1536, 200 * MIB, 3 * GIB // 2)] == [
        "0 B", "512 B", "1.5 KiB", "200.0 MiB", "1.5 GiB"]
