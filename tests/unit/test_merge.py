"""data/merge.py: several processes' profiles merged into one."""

import copy

import pytest
import test_profile

from heatline import data as profile
from heatline.data.merge import merge_processes, merge_segments, process_view

# Nothing checked here depends on the CPython version: runs on the main CPython and under ASan,
# not on every version (Makefile, suite-3.X).
pytestmark = pytest.mark.interpreter_independent


def _info(pid, ppid, offset_s=0.0, role="Pool worker"):
    return {"pid": pid, "ppid": ppid, "role": role, "argv": ["w"], "exit": "exit",
            "offset_s": offset_s}


def _merged(child_offset=0.5, **kwargs):
    main, child = test_profile.build(), test_profile.build()
    return main, child, merge_processes(
        (_info(100, 1, role="main"), main), [(_info(101, 100, child_offset), child)], **kwargs
    )


def test_times_are_summed_and_shares_recomputed():
    main, child, merged = _merged()
    assert merged["totals"]["attributed_s"] == pytest.approx(0.2)
    assert merged["totals"]["python_s"] == pytest.approx(0.11)
    line = next(x for x in merged["files"]["/src/work.py"]["lines"] if x["line"] == 2)
    assert (line["python_s"], line["native_s"]) == (0.1, 0.02)
    # The same work twice: every share is what it was in one process.
    one = next(x for x in main["files"]["/src/work.py"]["lines"] if x["line"] == 2)
    assert line["python_pct"] == one["python_pct"] == 50.0
    run = next(f for f in merged["files"]["/src/work.py"]["functions"] if f["qualname"] == "run")
    assert run["python_s"] == pytest.approx(0.1)
    assert merged["samples"] == 20 and merged["cpu_s"] == pytest.approx(0.16)
    assert merged["elapsed_s"] == main["elapsed_s"]  # the main process's


def test_the_longest_gaps_are_the_largest_and_the_long_ones_are_added():
    main, child = test_profile.build(), test_profile.build()
    main.update(max_sample_gap_s=0.05, long_gaps=2, long_gap_s=0.07)
    child.update(max_sample_gap_s=0.3, long_gaps=3, long_gap_s=0.4)
    merged = merge_processes((_info(100, 1, role="main"), main), [(_info(101, 100), child)])
    assert merged["max_sample_gap_s"] == 0.3
    assert (merged["long_gaps"], merged["long_gap_s"]) == (5, pytest.approx(0.47))


def test_threads_stacks_and_processes_table():
    main, child, merged = _merged()
    assert [t.get("pid") for t in merged["threads"]] == [None, None, 101, 101]
    assert len(merged["stacks"]["frames"]) == len(main["stacks"]["frames"])  # shared
    threads = [e["thread"] for e in merged["stacks"]["entries"]]
    assert threads == [0, 0, 2, 2]
    stack_s = sum(e["python_s"] + e["native_s"] + e["system_s"]
                  for e in merged["stacks"]["entries"])
    assert stack_s == pytest.approx(2 * (0.06 + 0.02))
    assert [(p["pid"], p["ppid"], p["role"], p["start_s"]) for p in merged["processes"]] == [
        (100, 1, "main", 0.0), (101, 100, "Pool worker", 0.5)]
    assert merged["processes"][1]["python_s"] == child["totals"]["python_s"]
    assert process_view(merged, 101) == child and process_view(merged, 100) == main
    with pytest.raises(KeyError):
        process_view(merged, 5)
    profile.validate(copy.deepcopy(merged))  # the documented shape, schema 5


def test_program_peak_is_the_peak_of_processes_alive_together():
    main, child = test_profile.build(), test_profile.build()
    main["memory_timeline"], main["peak_bytes"] = [[0.0, 100], [1.0, 0]], 100
    child["memory_timeline"], child["peak_bytes"] = [[0.0, 50], [0.2, 0]], 50
    together = merge_processes((_info(1, 0, role="main"), main), [(_info(2, 1, 0.5), child)])
    assert together["peak_bytes"] == 150
    assert [0.5, 150] in together["memory_timeline"]
    after = merge_processes((_info(1, 0, role="main"), main), [(_info(2, 1, 1.5), child)])
    assert after["peak_bytes"] == 100  # the child ran after the main process's peak


def test_children_that_left_no_profile_are_reported():
    _, _, merged = _merged(missing=2)
    assert "2 child processes left no profile" in merged["warnings"][-1]


def test_parts_of_one_process_across_an_exec_are_one_profile():
    """run/handover.py: the main process's profile before an exec and the new program's after
    it, merged as one process (no processes table), on the first part's clock."""
    before, after = test_profile.build(), test_profile.build()
    before["memory_timeline"], before["elapsed_s"] = [[0.0, 100], [0.5, 100]], 0.6
    after["memory_timeline"] = [[0.0, 40], [0.2, 0]]
    after["program"], after["argv"] = "/bin/other.py", ["other.py"]
    merged = merge_segments([({"pid": 100, "role": "main", "offset_s": 2.0}, before),
                             ({"pid": 100, "role": "main", "offset_s": 3.0}, after)])
    assert "processes" not in merged and "process_profiles" not in merged
    assert (merged["program"], merged["argv"]) == (before["program"], before["argv"])
    assert merged["elapsed_s"] == pytest.approx(1.0 + after["elapsed_s"])
    assert merged["totals"]["attributed_s"] == pytest.approx(0.2)
    # The exec freed the first part's memory; the second's is shifted by 1 s.
    assert merged["memory_timeline"] == [[0.0, 100], [0.5, 100], [0.6, 0], [1.0, 40], [1.2, 0]]
    assert [t.get("pid") for t in merged["threads"]] == [None, None, 100, 100]
    profile.validate(copy.deepcopy(merged))


def _with_memory(profile_, timeline, peak_at, lines, elapsed_s=2.0):
    """profile_ with a program timeline, its own peak and lines' timelines {line: timeline} in
    /src/app.py."""
    from heatline.data.memory import TOTAL_KEYS

    profile_["memory"] = {"enabled": True, **dict.fromkeys(TOTAL_KEYS, 0),
                          "sampling_window_bytes": 65536}
    profile_["memory_timeline"], profile_["elapsed_s"] = timeline, elapsed_s
    profile_["peak_bytes"] = max(v for _, v in timeline)
    profile_["peak_at"] = peak_at
    rows = profile_["files"]["/src/app.py"]["lines"]
    for number, points in lines.items():
        row = next(row for row in rows if row["line"] == number)
        row["timeline"] = points
    return profile_


def test_the_combined_peak_has_its_own_moment_and_the_lines_of_every_process_then():
    # The main process peaks alone at 0.1 s (150 at line 4), then holds 40 (line 5) while a
    # worker started at 1.0 s holds 150 (its line 4) from its 0.2 s: 190 at 1.2 s.
    main = _with_memory(test_profile.build(), [[0.1, 150], [0.3, 0], [0.5, 40]],
                        {"file": "/src/app.py", "line": 4, "t_s": 0.1},
                        {4: [[0.1, 150], [0.3, 0]], 5: [[0.5, 40]]})
    worker = _with_memory(test_profile.build(), [[0.2, 150], [0.6, 0]],
                          {"file": "/src/app.py", "line": 4, "t_s": 0.2},
                          {4: [[0.2, 150], [0.6, 0]]}, elapsed_s=0.8)
    merged = merge_processes((_info(100, 1, role="main"), main),
                             [(_info(101, 100, 1.0), worker)])
    assert merged["peak_bytes"] == 190
    assert merged["combined_peak"] == {"t_s": 1.2, "lines": [
        {"pid": 101, "file": "/src/app.py", "line": 4, "bytes": 150},
        {"pid": 100, "file": "/src/app.py", "line": 5, "bytes": 40}]}
    assert merged["peak_at"] == {"file": "/src/app.py", "line": 4, "t_s": 1.2, "pid": 101}
    assert merged["main_peak_bytes"] == 150
    assert merged["main_peak_at"] == {"file": "/src/app.py", "line": 4, "t_s": 0.1}
    profile.validate(copy.deepcopy(merged))
    # The report names the moment, the lines and their processes, and the main's own peak.
    from heatline.renderers.terminal import _memory_footer

    footer = _memory_footer(merged)
    assert footer.startswith(
        "peak memory <0.1 MiB at 1.20 s (all processes together), held by "), footer
    assert "app.py:4 <0.1 MiB (pid 101, Pool worker), " in footer
    assert "app.py:5 <0.1 MiB (main); main process alone <0.1 MiB at 0.100 s, " in footer
    from heatline.renderers.html import page_data

    assert page_data(merged)["peak"]["lines"][0][2:] == [150, "pid 101, Pool worker"]


def test_a_child_that_ended_holds_nothing_in_the_combined_timeline():
    # A worker whose profile ends (at 1.0 + 0.5 s) still holding 150: gone after that, so the
    # main process's later 100 is not added to it.
    main = _with_memory(test_profile.build(), [[0.1, 10], [2.0, 100]], None, {})
    worker = _with_memory(test_profile.build(), [[0.1, 150]], None, {4: [[0.1, 150]]},
                          elapsed_s=0.5)
    merged = merge_processes((_info(100, 1, role="main"), main),
                             [(_info(101, 100, 1.0), worker)])
    assert merged["memory_timeline"] == [[0.1, 10], [1.1, 160], [1.5, 10], [2.0, 100]]
    assert merged["peak_bytes"] == 160 and merged["combined_peak"]["t_s"] == 1.1


def test_a_malformed_combined_peak_is_refused():
    main = _with_memory(test_profile.build(), [[0.1, 10]], None, {})
    worker = _with_memory(test_profile.build(), [[0.1, 150]], None, {4: [[0.1, 150]]})
    merged = merge_processes((_info(100, 1, role="main"), main),
                             [(_info(101, 100, 1.0), worker)])
    merged["combined_peak"]["lines"][0]["pid"] = "101"
    with pytest.raises(profile.ProfileError, match=r"combined_peak.lines\[0\].pid"):
        profile.validate(merged)


def test_thread_names_stay_with_their_process():
    """Each process's threads keep the names read in that process (a child's "loader" is not
    the main process's), and every view tells them apart by their ids."""
    from heatline.data.queries import thread_name

    main = test_profile.build(test_profile.snapshot(thread_names=[[11, "MainThread"],
                                                                  [12, "loader"]]))
    child = test_profile.build(test_profile.snapshot(thread_names=[[12, "writer"]]))
    merged = merge_processes((_info(100, 1, role="main"), main), [(_info(101, 100), child)])
    assert [(t.get("pid"), t.get("name")) for t in merged["threads"]] == [
        (None, "MainThread"), (None, "loader"), (101, None), (101, "writer")]
    assert [thread_name(merged, i) for i in range(4)] == [
        "main thread 11", "loader (thread 12)", "main thread 11", "writer (thread 12)"]
    assert process_view(merged, 101) == child
    profile.validate(copy.deepcopy(merged))
