"""--malloc-threshold N: a line's allocations are reported only when it allocated at least N
sampling windows of bytes (Scalene's "at least N allocations", one sample per window)."""

import json

WINDOW = 65536


def _row(report, marker):
    rows = [line for line in report.splitlines() if marker in line]
    assert len(rows) == 1, report
    return rows[0]


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
    # The truth: bytearray(n) allocates n + 1 bytes and a 56-byte object, recorded exactly.
    assert 10_000_000 < big["alloc_python_bytes"] <= 10_000_000 + WINDOW
    assert 300_000 < small["alloc_python_bytes"] <= 300_000 + WINDOW
    env = {"COLUMNS": "200"}
    for threshold, small_shown in (("1", True), ("4", True), ("5", False), ("152", False)):
        view = run_heatline("view", "--malloc-threshold", threshold, str(path), text=True,
                            env=env, timeout=120)
        assert view.returncode == 0, view.stderr
        assert "9.5" in _row(view.stdout, "the big line"), threshold  # MiB: 10^7 / 2^20
        assert ("0.3" in _row(view.stdout, "the small line")) is small_shown, threshold
    view = run_heatline("view", "--malloc-threshold", "153", str(path), text=True, env=env,
                        timeout=120)
    assert "9.5" not in _row(view.stdout, "the big line")
    assert json.loads(path.read_text())["files"]  # the file itself is never filtered


def test_malloc_threshold_must_be_a_positive_count(run_heatline, program):
    for value in ("0", "-3", "many", "1.5"):
        result = run_heatline("--malloc-threshold", value, program("two_allocations.py"),
                              text=True, timeout=120)
        assert result.returncode != 0
        assert result.stderr.startswith("heatline: error: ") and result.stderr.count("\n") == 1
