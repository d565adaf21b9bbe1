"""File and function names as the engine reads them from code objects: kept whole whatever
their length and equal to Python's own str even when a path's bytes are not UTF-8
(surrogateescape'd bytes must not fail the snapshot)."""

import os
import time

from heatline import _native

BODY = "def work():\n    t = 0\n    for i in range(400_000):\n        t += i\n    return t\n"


def _run_under_engine(filenames):
    """Compiles BODY under each filename, runs each work() under the engine, returns the
    snapshot's python+native ns per file path."""
    functions = []
    for filename in filenames:
        namespace = {}
        exec(compile(BODY, filename, "exec"), namespace)
        functions.append(namespace["work"])
    _native.start(0.001, exclude_prefixes=[])
    try:
        for work in functions:
            for _ in range(5):
                work()
    finally:
        _native.stop()
    snapshot = _native.snapshot()
    paths = [f["path"] for f in snapshot["files"]]
    totals = dict.fromkeys(paths, 0)
    for file, _, _, python_ns, native_ns, _, _ in snapshot["lines"]:
        totals[paths[file]] += python_ns + native_ns
    return totals


def test_paths_longer_than_1024_characters_are_kept_whole_and_apart():
    stem = "/tmp/" + "/".join(["d" * 99] * 20)  # 2,000+ characters shared by both
    first, second = stem + "/first.py", stem + "/second.py"
    totals = _run_under_engine([first, second])
    assert totals.get(first, 0) > 0, [p[-30:] for p in totals]
    assert totals.get(second, 0) > 0, [p[-30:] for p in totals]


def test_path_with_undecodable_bytes_comes_back_as_the_same_str():
    filename = os.fsdecode(b"/tmp/caf\xe9/loop\xff.py")  # lone surrogates, as Python makes them
    assert "\udce9" in filename
    totals = _run_under_engine([filename])
    assert totals.get(filename, 0) > 0, list(totals)


def test_current_stack_reports_undecodable_paths_unchanged():
    filename = os.fsdecode(b"/tmp/\xfe\xfd.py")
    namespace = {}
    exec(compile("def here(stack):\n    return stack()\n", filename, "exec"), namespace)
    stack = namespace["here"](_native._current_stack)
    assert stack[0][0] == filename
    assert stack[0][2] == 2


# --- one vocabulary across the seam ------------------------------------------------------------


def _profile_name(key):
    """The profile's name of a snapshot field: X_ns is X_s, everything else is the same name."""
    return key[:-3] + "_s" if key.endswith("_ns") else key


def test_snapshot_memory_and_gpu_fields_carry_the_profiles_own_names():
    """The snapshot names each quantity as the profile does (with _ns for the profile's _s), so
    nothing renames it on the way: the memory totals are the profile's `memory` keys, a line's
    memory record holds the profile line's byte fields, timelines are lists of [t_ns, value]
    lists, and the GPU part's fields are those of the profile's `gpu` object."""
    from heatline.data import memory as memory_report

    def work():
        kept = bytearray(3_000_000)  # far above the window: recorded exactly
        sum(i for i in range(1_000_000))  # enough ticks for the thread to be sampled
        return bytes(kept)

    _native.start(0.001, exclude_prefixes=[], memory_sampling_window_bytes=64 * 1024)
    try:
        held = work()
    finally:
        _native.stop()
    snapshot = _native.snapshot()
    assert len(held) == 3_000_000
    memory = snapshot["memory"]
    assert memory["enabled"]
    # clock_origin_ns is the one field that is no profile quantity: the CLOCK_MONOTONIC time
    # the t_ns count from, which the session turns into its start_epoch (child processes'
    # timelines are put on the main process's clock with it).
    assert set(memory) == {
        "enabled", *memory_report.TOTAL_KEYS, "peak_bytes", "peak_at", "memory_timeline", "lines",
        "clock_origin_ns",
    }
    assert 0 < memory["clock_origin_ns"] <= time.monotonic_ns()
    assert set(memory["peak_at"]) == {"file", "line", "t_ns"}
    timelines = [memory["memory_timeline"]] + [line["timeline"] for line in memory["lines"]]
    assert all(timelines) and all(
        type(point) is list and len(point) == 2 for timeline in timelines for point in timeline
    )
    for record in memory["lines"]:
        assert set(record) == {
            "file", "line", "function", *memory_report.LINE_KEYS, "alloc_samples",
            "freed_samples", "timeline",
        }
    assert any(record["copy_bytes"] == 3_000_000 for record in memory["lines"])
    assert memory["sampling_window_bytes"] == 64 * 1024

    gpu = snapshot["gpu"]  # off: the same keys, empty
    profile_gpu_keys = {"enabled", "kernel_tracing", "unattributed_gpu_s", "alloc_peak_bytes",
                        "alloc_peak_at", "records", "dropped_records", "devices", "kernels"}
    assert profile_gpu_keys <= {_profile_name(key) for key in gpu}
    assert gpu["enabled"] is False and gpu["lines"] == [] and gpu["alloc_peak_at"] is None
    threads = snapshot["threads"]
    assert {_profile_name(key) for key in threads[0]} == {
        "native_id", "main", "python_s", "native_s", "system_s", "cpu_wait_s", "unattributed_s",
        "cpu_s", "engine_wait_s", "comm",
    }
    assert "sampling_interval_ns" in snapshot
    # on from start() to stop(): one period, a [start_ns, end_ns] list like a timeline's points
    [[start, end]] = snapshot["profiled_periods"]
    assert type(snapshot["profiled_periods"][0]) is list and 0 <= start < end
    assert snapshot["profiled_periods_count"] == 1
    assert snapshot["profiled_periods_dropped_changes"] == 0


def test_in_seconds_turns_every_ns_field_and_timeline_into_seconds_in_one_place():
    from heatline.data.snapshot import in_seconds

    record = {"gpu_ns": 1_500_000, "name": "k", "peak_at": {"file": 0, "line": 3, "t_ns": 2_000},
              "memory_timeline": [[3_000_000_000, 7], [1_000_000_000, 5]], "lines": [[1, 2]]}
    assert in_seconds(record) == {
        "gpu_s": 0.0015, "name": "k", "peak_at": {"file": 0, "line": 3, "t_s": 0.000002},
        "memory_timeline": [[1.0, 5], [3.0, 7]], "lines": [[1, 2]],
    }
    assert list(in_seconds(record)) == ["gpu_s", "name", "peak_at", "memory_timeline", "lines"]
