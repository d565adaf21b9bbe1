"""Regions and modules below the run: the engine's label stacks (push, pop, out-of-order
closes), the profile's regions and modules from a label tree (data/labels.py), their merge
across processes, and the import watch that hooks torch (integrations/torch_watch.py)."""

import sys

import pytest

import heatline
from heatline import _native
from heatline.data import labels as report
from heatline.engine import labels
from heatline.integrations import torch_watch


def _nodes():
    raw = labels.raw()
    names = [tuple(name) for name in raw["names"]]
    return {(None if parent is None else parent, names[name]): (index, count)
            for index, (parent, name, count, _wall, _dropped) in enumerate(raw["nodes"])}


@pytest.fixture
def session():
    """A session running: counts are a session's (after one stops, closes count no entry)."""
    heatline.start(cpu_only=True)
    try:
        yield
    finally:
        heatline.stop()


def test_an_exit_out_of_order_closes_its_own_entry_and_reparents_the_ones_above(session):
    a, b = labels.region_id("ooo-a"), labels.region_id("ooo-b")
    token_a = labels.push(a)
    token_b = labels.push(b)
    assert labels.pop(token_a) is True  # a closes although b is innermost
    assert labels.pop(token_a) is False  # closed already
    nodes = _nodes()
    node_a, count_a = nodes[(None, ("region", "ooo-a"))]
    assert count_a >= 1
    # b stays open, now at the top level: the innermost node is "ooo-b" with no parent
    current = _native.label_current()
    assert current == nodes[(None, ("region", "ooo-b"))][0]
    assert labels.pop(token_b) is True and _native.label_current() is None
    # b counted once, under the path it closed at; its path under a keeps no count
    after = _nodes()
    assert after[(None, ("region", "ooo-b"))][1] == 1
    assert after[(node_a, ("region", "ooo-b"))][1] == 0


def test_closes_after_the_session_count_no_entry_and_no_time_past_its_end():
    heatline.start(cpu_only=True)
    token = labels.push(labels.region_id("past-end"))
    heatline.stop()
    ended = _nodes()[(None, ("region", "past-end"))]
    assert labels.pop(token) is True
    raw = labels.raw()
    index = ended[0]
    _, _, count, wall_ns, _ = raw["nodes"][index]
    assert count == 0  # closed after the session ended
    wall_after = wall_ns
    import time

    time.sleep(0.05)
    assert labels.raw()["nodes"][index][3] == wall_after  # its time stopped at the end


def test_a_pop_of_another_threads_entry_does_nothing():
    import threading

    token = labels.push(labels.region_id("other-thread"))
    popped = []
    thread = threading.Thread(target=lambda: popped.append(labels.pop(token)))
    thread.start()
    thread.join()
    assert popped == [False]
    assert labels.pop(token) is True


def _raw(nodes, charges, names, lines=(), slices=()):
    return {"labels": {"nodes": nodes, "charges": charges, "names": names, "lines": list(lines),
                       "slices": list(slices), "origin_ns": 1000, "open": 0},
            "files": [{"path": "/p.py", "user": True}]}


def test_regions_and_modules_from_a_label_tree():
    names = [["region", "step"], ["module", "Net", "", "Net"], ["module", "Net", "enc", "Enc"],
             ["region", "attn"], ["module", "Net", "dec", "Dec"]]
    # step -> Net -> enc -> attn ; Net -> dec
    nodes = [(None, 0, 2, 10e9, 0), (0, 1, 2, 8e9, 0), (1, 2, 2, 5e9, 0), (2, 3, 4, 2e9, 0),
             (1, 4, 2, 1e9, 0)]
    charges = [(1e9, 0, 0, 0), (0, 1e9, 0, 0), (0, 2e9, 0, 0), (1e9, 1e9, 0, 0), (0, 1e9, 0, 0)]
    lines = [(3, 0, 7, 2e9), (2, 0, 5, 2e9)]
    slices = [(0, 11, 1000 + 1e9, 1000 + 6e9), (1, 11, 1000, 2000)]  # module spans: not listed
    result = report.regions_and_modules(_raw(nodes, charges, names, lines, slices))
    regions = {r["path"]: r for r in result["regions"]}
    assert set(regions) == {"step", "step/attn"}  # modules in between are not in the path
    step = regions["step"]
    assert (step["count"], step["wall_s"]) == (2, 10.0)
    assert (step["python_s"], step["native_s"]) == (2.0, 5.0)  # the whole subtree
    assert step["top_lines"][0]["file"] == "/p.py" and step["slices"] == [[11, 1.0, 6.0]]
    assert regions["step/attn"]["python_s"] == 1.0 and regions["step/attn"]["slices"] == []
    modules = {m["path"]: m for m in result["modules"]}
    assert modules[""]["class"] == "Net" and modules["enc"]["root"] == "Net"
    assert modules[""]["self_s"] == 8.0 - 5.0 - 1.0  # less enc and dec
    assert modules["enc"]["self_s"] == 5.0  # a region inside it is still its own time
    assert modules["enc"]["native_s"] == 3.0 and modules["enc"]["python_s"] == 1.0


def test_no_labels_no_keys():
    assert report.regions_and_modules({"files": []}) == {}
    assert report.regions_and_modules(_raw([], [], [])) == {}


def test_merged_across_processes_by_path():
    one = report.regions_and_modules(_raw([(None, 0, 1, 1e9, 0)], [(1e9, 0, 0, 0)],
                                          [["region", "a"]], slices=[(0, 1, 1000, 2000)]))
    two = report.regions_and_modules(_raw([(None, 0, 2, 3e9, 0), (None, 1, 1, 1e9, 0)],
                                          [(0, 2e9, 0, 0), (1e9, 0, 0, 0)],
                                          [["region", "a"], ["module", "M", "", "M"]]))
    merged = report.merged(one, two)
    a = next(r for r in merged["regions"] if r["path"] == "a")
    assert (a["count"], a["wall_s"], a["python_s"], a["native_s"]) == (3, 4.0, 1.0, 2.0)
    assert len(a["slices"]) == 1  # the first profile's own
    assert merged["modules"][0]["root"] == "M"
    assert one["regions"][0]["count"] == 1  # the inputs unchanged


def test_when_imported_calls_back_after_the_import_and_imports_nothing(tmp_path, monkeypatch):
    (tmp_path / "watched_mod.py").write_text("DONE = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    seen = []
    torch_watch.when_imported("watched_mod", lambda m: seen.append(m.DONE))
    torch_watch.when_imported("watched_mod", lambda m: 1 / 0)  # ignored
    assert "watched_mod" not in sys.modules and seen == []
    import watched_mod

    assert seen == [True]
    assert watched_mod.__spec__.loader.__class__.__name__ != "_Loader"
    assert not any(type(f).__name__ == "_Finder" for f in sys.meta_path)
    torch_watch.when_imported("watched_mod", lambda m: seen.append("again"))  # imported: now
    assert seen == [True, "again"]
    sys.modules.pop("watched_mod")


def test_a_region_name_that_is_not_a_string_is_one_clear_error():
    for bad in (3, None, b"bytes", ("a",)):
        with pytest.raises(TypeError) as raised:
            heatline.region(bad)
        assert str(raised.value) == (
            f"heatline.region's name must be a str, not {type(bad).__name__}")
    assert heatline.region("fine").name == "fine"
