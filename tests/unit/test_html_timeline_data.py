"""The HTML report's timeline and module tree data (renderers/html.py), from made-up
profiles: which bars are drawn, where they go, and the tree's order and depths."""

from heatline.data.summary import slow_steps
from heatline.renderers import html


def _threads():
    return [{"native_id": 7, "name": "worker"}, {"native_id": 5, "main": True,
                                                 "name": "MainThread"}]


def test_timeline_keeps_the_earliest_spans_and_counts_the_rest():
    spans = [[7, 1.0 + i, 1.5 + i] for i in range(html.MAX_REGION_BARS)]
    regions = [
        {"path": "late", "slices": spans, "slices_dropped": 3},
        {"path": "early/inner", "slices": [[5, 0.2, 0.3], [7, 0.25, 0.26]], "slices_dropped": 0},
    ]
    timeline = html._timeline({"threads": _threads(), "regions": regions})
    assert timeline["regions_left_out"] == 2 + 3  # two past the cap, three never kept
    # the main thread's lane first, whatever its spans' times; depth = the path's segments
    [main, worker] = timeline["lanes"]
    assert main[0].startswith("main thread") and main[1] == [["early/inner", 1, 0.2, 0.3]]
    assert worker[0] == "worker (thread 7)"
    assert worker[1][0] == ["early/inner", 1, 0.25, 0.26]
    assert len(main[1]) + len(worker[1]) == html.MAX_REGION_BARS
    assert worker[1][-1][2] == spans[html.MAX_REGION_BARS - 3][1]  # the latest two left out
    assert timeline["steps"] == [] and timeline["steps_left_out"] == 0
    assert timeline["end_s"] == spans[html.MAX_REGION_BARS - 3][2]
    assert html._timeline({"threads": _threads(), "regions": [], "steps": {}}) is None


def test_timeline_steps_are_marked_as_the_summary_finds_them_and_slow_ones_kept():
    count = html.MAX_STEP_BARS + 50
    durations = [0.1] * count
    durations[0] = 2.0  # warm-up
    durations[10] = durations[count - 5] = 1.0  # slow; the second past the cap
    started = [0.1 * i for i in range(count)]
    timeline = html._timeline({"threads": [], "steps": {"started_s": started,
                                                        "durations_s": durations}})
    warmup, slow, _ = slow_steps(durations)
    assert warmup == [0] and slow == [10, count - 5]
    bars = timeline["steps"]
    assert len(bars) == html.MAX_STEP_BARS + 1 and timeline["steps_left_out"] == 49
    assert bars[0] == [1, 0.0, 2.0, 1] and bars[10][3] == 2 and bars[-1] == [
        count - 4, round(started[count - 5], 6), 1.0, 2]
    assert sum(bar[3] == 0 for bar in bars) == html.MAX_STEP_BARS - 2


def test_module_tree_puts_each_module_after_its_nearest_recorded_ancestor():
    def module(root, path):
        return {"root": root, "path": path, "class": "C", "count": 1, "wall_s": 1.0,
                "self_s": 0.5, "python_s": 0.1, "native_s": 0.2, "system_s": 0.0,
                "cpu_wait_s": 0.0}

    paths = ["enc.layers.10", "", "enc", "enc.layers.2", "enc.layers.2.attn", "dec"]
    modules = [module("Net", path) for path in paths] + [module("Aux", "")]
    modules[0]["alloc_bytes"] = 64
    rows = html._module_tree({"modules": modules})
    assert [(row[2], row[0], row[11]) for row in rows] == [
        ("Aux", "", 0), ("Net", "", 0), ("Net", "dec", 1), ("Net", "enc", 1),
        ("Net", "enc.layers.2", 2), ("Net", "enc.layers.2.attn", 3), ("Net", "enc.layers.10", 2)]
    assert rows[-1][10] == 64 and rows[0][10] is None
