"""units.py: the sizes and durations of budgets (heatline check, the pytest plugin)."""

import pytest

from heatline.units import format_duration, format_size, parse_duration, parse_size


@pytest.mark.parametrize(
    ("text", "size"),
    [("500MB", 500_000_000), ("200 MB", 200_000_000), ("64KiB", 65536), ("1.5GiB", 3 << 29),
     ("1048576", 1048576), (4096, 4096), ("2g", 2_000_000_000), ("10 b", 10), ("0", 0),
     ("1e3KB", 1_000_000)],
)
def test_sizes(text, size):
    assert parse_size(text) == size


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("30s", 30.0), ("250ms", 0.25), ("2m", 120.0), ("1.5", 1.5), (3, 3.0), ("1h", 3600.0),
     ("500 us", 5e-4), ("2 min", 120.0)],
)
def test_durations(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("bad", ["", "MB", "-1MB", "12parsecs", "inf", "nan", "1.2.3MB", True,
                                 None, [1], "1e400"])
def test_bad_values_raise_one_line_value_errors(bad):
    for parse in (parse_size, parse_duration):
        with pytest.raises(ValueError) as info:
            parse(bad)
        assert "\n" not in str(info.value)


def test_formatting_matches_the_reports_powers_of_1000():
    assert format_size(67_108_864) == "67.1 MB"
    assert format_size(512) == "512 B"
    assert format_duration(0.354) == "354 ms"
    assert format_duration(31.25) == "31.25 s"
