"""--malloc-threshold N: a line's allocations are reported only when it allocated at least N
sampling windows of bytes (Scalene's "at least N allocations", one sample per window)."""

import json
import sys

WINDOW = 65536


def _row(report, marker):
    rows = [line for line in report.splitlines() if marker in line]
    assert len(rows) == 1, report
    return rows[0]



def _bytearray_block(n):
    """The bytes of the one block bytearray(n) allocates for its contents."""
    return sys.getsizeof(b"") + n if sys.version_info >= (3, 15) else n + 1

def test_lines_below_the_threshold_lose_their_allocations_in_the_report(
    run_heatline, program, tmp_path
):
    path = tmp_path / "prof.json"
    result = run_heatline("-q", "--memory-sampling-window", str(WINDOW), "-o", str(path),
                          program("two_allocations.py"), text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    files = json.loads(path.read_text())["files"]
    lines = {line["source"].strip(): line for entry in files.values() for line in entry["lines"]}
    big = next(line for source, line in lines.items() if "the big line" in source)
    small = next(line for source, line in lines.items() if "the small line" in source)
    # The truth: bytearray(n) allocates its buffer in one block, at least a window, so
    # recorded exactly (n + 1 bytes; from 3.15 the buffer is a bytes object, sizeof(b"") + n);
    # the line's small allocations (the 56-byte object and any others, far under W/2 bytes in
    # all) are sampled: a sample point falls in them with probability about
    # their size / W, and two points are at least W/2 bytes apart, so they add 0 or 1 windows.
    windows = {}
    for name, line, size in (("big", big, 10_000_000), ("small", small, 300_000)):
        extra = line["alloc_python_bytes"] - _bytearray_block(size)
        assert extra in (0, WINDOW), (name, line["alloc_python_bytes"])
        windows[name] = line["alloc_python_bytes"] // WINDOW  # 152 or 153; 4 or 5
    env = {"COLUMNS": "200"}
    # A line's allocations are shown when it allocated at least N windows of bytes.
    for threshold in (1, 4, windows["small"], windows["small"] + 1, 152):
        view = run_heatline("view", "--malloc-threshold", str(threshold), str(path), text=True,
                            env=env, timeout=120)
        assert view.returncode == 0, view.stderr
        assert "9.5" in _row(view.stdout, "the big line"), threshold  # MiB: 10^7 / 2^20
        small_shown = threshold <= windows["small"]
        assert ("0.3" in _row(view.stdout, "the small line")) is small_shown, threshold
    view = run_heatline("view", "--malloc-threshold", str(windows["big"] + 1), str(path),
                        text=True, env=env, timeout=120)
    assert "9.5" not in _row(view.stdout, "the big line")
    assert json.loads(path.read_text())["files"]  # the file itself is never filtered


def test_malloc_threshold_must_be_a_positive_count(run_heatline, program):
    for value in ("0", "-3", "many", "1.5"):
        result = run_heatline("--malloc-threshold", value, program("two_allocations.py"),
                              text=True, timeout=120)
        assert result.returncode != 0
        assert result.stderr.startswith("heatline: error: ") and result.stderr.count("\n") == 1
