"""data/runs.py (`heatline merge`): the profiles of several runs joined, and the keys of
process_profiles (data/merge.py) that keep processes of several hosts apart."""

import copy

import pytest
import test_profile

from heatline import data as profile
from heatline.data.merge import merge_processes, process_keys, process_view
from heatline.data.runs import MergeError, merge_runs, start_epoch

pytestmark = pytest.mark.interpreter_independent

EPOCH = 1_700_000_000.25


def _run(host="a", pid=100, start=EPOCH, **run):
    return test_profile.build(host=host, pid=pid, start_epoch=start, **run)


def _row(pid, host=None):
    return {"pid": pid, **({"host": host} if host is not None else {})}


def test_keys_are_pids_unless_two_processes_share_one():
    assert process_keys([_row(1, "a"), _row(2, "a")]) == ["1", "2"]
    assert process_keys([_row(1, "a"), _row(1, "b"), _row(2, "b")]) == ["a:1", "b:1", "2"]
    assert process_keys([_row(1, "a"), _row(1, "a"), _row(1)]) == ["a:1", "a:1#2", "?:1"]
    assert process_keys([]) == []


def test_the_identity_fields_are_written_and_documented_optional():
    built = _run(host="node-1", pid=4242, start=EPOCH + 0.0000004)
    assert (built["host"], built["pid"], built["started_at_epoch"]) == ("node-1", 4242, EPOCH)
    assert "host" not in test_profile.build()  # not given: absent, as in older files
    profile.validate(copy.deepcopy(built))
    bad = dict(built, host=3)
    with pytest.raises(profile.ProfileError, match="host"):
        profile.validate(bad)


def test_a_run_keeps_keys_by_pid_and_children_inherit_the_host():
    main, child = _run(), test_profile.build()
    info = {"ppid": 1, "argv": ["w"], "exit": "exit"}
    merged = merge_processes((dict(info, pid=100, role="main", offset_s=0.0), main),
                             [(dict(info, pid=101, role="fork child", offset_s=0.1), child)])
    assert [(p["host"], p["pid"]) for p in merged["processes"]] == [("a", 100), ("a", 101)]
    assert list(merged["process_profiles"]) == ["100", "101"]
    assert merged["pid"] == 100


def test_start_epoch_falls_back_to_started_at():
    assert start_epoch(_run()) == EPOCH
    old = test_profile.build(started_at="2024-01-01T00:00:01.250Z")
    assert start_epoch(old) == pytest.approx(1704067201.25)
    assert start_epoch(test_profile.build(started_at="")) is None


def test_runs_are_put_on_the_clock_of_the_earliest_start():
    a, b = _run("a", 100, EPOCH + 0.75), _run("b", 100, EPOCH)
    merged = merge_runs([("a.json", a), ("b.json", b)])
    rows = [(p["host"], p["pid"], p["start_s"]) for p in merged["processes"]]
    assert rows == [("b", 100, 0.0), ("a", 100, 0.75)]
    assert process_keys(merged["processes"]) == ["b:100", "a:100"]
    assert process_view(merged, "a:100") is a and process_view(merged, "b:100") is b
    with pytest.raises(LookupError, match="2 processes have pid 100: give one of b:100, a:100"):
        process_view(merged, 100)
    with pytest.raises(KeyError):
        process_view(merged, "c:100")
    assert merged["started_at_epoch"] == EPOCH and merged["host"] == "b"
    # The later host's warnings name it.
    a_warned = dict(a, warnings=["slow disk"])
    warned = merge_runs([("a.json", a_warned), ("b.json", b)])
    assert "process 100 on a (main): slow disk" in warned["warnings"]
    assert merged["elapsed_s"] == pytest.approx(0.75 + a["elapsed_s"])
    assert merged["totals"]["attributed_s"] == pytest.approx(
        a["totals"]["attributed_s"] + b["totals"]["attributed_s"])
    profile.validate(copy.deepcopy(merged))


def test_old_files_without_host_or_pid_merge():
    old_a = test_profile.build(started_at="2024-01-01T00:00:00.000Z")
    old_b = test_profile.build(started_at="2024-01-01T00:00:02.500Z")
    merged = merge_runs([("a.json", old_a), ("b.json", old_b)])
    assert [(p.get("host"), p["pid"], p["start_s"]) for p in merged["processes"]] == [
        (None, 0, 0.0), (None, 0, 2.5)]
    assert list(merged["process_profiles"]) == ["?:0", "?:0#2"]
    profile.validate(copy.deepcopy(merged))


def test_a_profile_without_a_start_is_put_at_time_0_with_a_warning():
    merged = merge_runs([("a.json", _run()), ("b.json", _run("b", start=None, started_at=""))])
    assert "b.json records no start time" in merged["warnings"][-1]
    assert [p["start_s"] for p in merged["processes"]] == [0.0, 0.0]


def test_refusals_name_the_files():
    a = _run()
    with pytest.raises(MergeError, match="'a.json' has profile schema version 5 and 'b.json' "
                       "version 4"):
        merge_runs([("a.json", a), ("b.json", dict(_run("b"), schema_version=4))])
    with pytest.raises(MergeError, match="'a.json' and 'c.json' hold the same run "
                       r"\(process 100 on a, started"):
        merge_runs([("a.json", a), ("c.json", copy.deepcopy(a))])
    with pytest.raises(MergeError, match="'a.json' is given twice"):
        merge_runs([("a.json", a), ("a.json", a)])
    merged = merge_runs([("a.json", a), ("b.json", _run("b"))])
    broken = dict(merged, process_profiles={"nope": a, "also": a})
    with pytest.raises(MergeError, match="'m.json' has no profile of its process a:100"):
        merge_runs([("m.json", broken), ("c.json", _run("c"))])
