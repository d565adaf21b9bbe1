"""Deep stacks whose middle the engine elided (docs/profile-format.md, "stacks"): the marker
frame in the profile, stacks merged across depths, inclusive time and call edges around the
marker, the warning, merging processes, validation, and each export's spelling of the marker;
profiles without markers (older files) read as before. Synthetic snapshots, no engine."""

import gzip
import json

from heatline.data import merge
from heatline.data.io import ProfileError, validate
from heatline.data.queries import call_edges, cut_stacks, frame_label, inclusive_times
from heatline.data.snapshot import ELIDED_KEPT, ELIDED_LOST, ELIDED_OPEN
from heatline.renderers import collapsed, pprof, speedscope
from heatline.renderers.html import page_data
from test_profile import MS, build, snapshot

OUTER, INNER = 63, 64


def _deep_snapshot(marker=ELIDED_KEPT, counts=(10, 200)):
    """main (app.py:4) calls run (work.py:2) recursively, seen at depths 128 + count - 1:
    63 outer frames (the module, main, then run), the marker, 64 inner run frames."""
    outer = ((2, 9), (0, 4), *[(1, 2)] * (OUTER - 2))
    inner = ((1, 2),) * INNER
    stacks = [((*outer, (marker, count), *inner), 0, 10 * MS, 0, 0) for count in counts]
    stacks.append(((*outer[:5],), 0, 5 * MS, 0, 0))  # not cut
    return snapshot(stacks=stacks)


def test_a_marker_is_a_frame_with_its_count_and_stacks_across_depths_are_one_entry():
    prof = build(_deep_snapshot())
    frames, entries = prof["stacks"]["frames"], prof["stacks"]["entries"]
    (marker,) = [frame for frame in frames if "elided" in frame]
    assert marker == {"file": "", "name": "… 10-200 frames elided …",
                      "qualname": "… 10-200 frames elided …", "line": 0, "elided": 10,
                      "elided_max": 200, "functions_kept": True}
    assert len(entries) == 2  # the two depths are one entry, 20 ms
    cut = entries[0]
    assert len(cut["stack"]) == 128 and frames[cut["stack"][OUTER]] is marker
    assert cut["python_s"] == 0.02
    # One depth: the count alone.
    prof = build(_deep_snapshot(counts=(7,)))
    assert [f["name"] for f in prof["stacks"]["frames"] if "elided" in f] == [
        "… 7 frames elided …"]


def test_inclusive_time_counts_the_kept_frames_and_edges_do_not_cross_the_marker():
    prof = build(_deep_snapshot())
    inclusive = {qualname: s for (_, qualname), s in inclusive_times(prof).items()}
    assert inclusive == {"<module>": 0.025, "main": 0.025, "run": 0.025}
    edges = {(a[1], b[1]) for a, b in call_edges(prof)}
    assert edges == {("<module>", "main"), ("main", "run")}


def test_the_warning_says_how_much_time_how_deep_and_whether_anything_was_lost():
    kept = build(_deep_snapshot())
    cut = cut_stacks(kept)
    assert (cut.seconds, cut.lost_s, cut.total_s) == (0.02, 0.0, 0.025)
    assert (cut.deepest, cut.kept, cut.outer, cut.inner) == (327, 128, OUTER, INNER)
    (warning,) = [w for w in kept["warnings"] if w.startswith("stacks deeper")]
    assert warning == (
        "stacks deeper than 128 frames were cut for 0.020 s of thread time (80.0% of the "
        "stacks' time; the deepest had 327 frames): each kept its outermost 63 and innermost "
        "64 frames, the middle elided; every function among the elided frames was also among "
        "the kept ones, so every function's inclusive time is complete")
    lost = build(_deep_snapshot(marker=ELIDED_LOST))
    (warning,) = [w for w in lost["warnings"] if w.startswith("stacks deeper")]
    assert warning.endswith(
        "the middle elided; in 0.020 s of it some elided functions were not among the kept "
        "ones: a function found only among elided frames misses up to that time from its "
        "inclusive time")
    assert not any(w.startswith("stacks deeper") for w in build()["warnings"])


def test_a_stack_deeper_than_the_walk_follows_is_rooted_at_its_marker():
    inner = ((1, 2),) * INNER
    prof = build(snapshot(stacks=[(((ELIDED_OPEN, 4032), *inner), 0, 10 * MS, 0, 0)]))
    (marker,) = [f for f in prof["stacks"]["frames"] if "elided" in f]
    assert marker["name"] == "… 4032+ frames elided …" and marker["outer_unknown"] is True
    assert marker["functions_kept"] is False
    cut = cut_stacks(prof)
    assert cut.open_ended and cut.deepest == 4032 + INNER and cut.lost_s == 0.01


def test_validation_accepts_markers_and_refuses_a_malformed_one():
    prof = json.loads(json.dumps(build(_deep_snapshot())))
    validate(prof)
    marker = next(f for f in prof["stacks"]["frames"] if "elided" in f)
    marker["elided"] = "many"
    try:
        validate(prof)
    except ProfileError as exc:
        assert ".elided should be" in str(exc)
    else:
        raise AssertionError("a marker with a non-integer count was accepted")


def test_merging_processes_keeps_markers_of_different_counts_apart():
    one, two = build(_deep_snapshot(counts=(10,))), build(_deep_snapshot(counts=(20,)))
    info = {"ppid": 1, "role": "fork child", "argv": [], "exit": "exit", "offset_s": 0.0}
    merged = merge.merge_processes(({**info, "pid": 1, "role": "main"}, one),
                                   [({**info, "pid": 2}, two)])
    names = sorted(f["name"] for f in merged["stacks"]["frames"] if "elided" in f)
    assert names == ["… 10 frames elided …", "… 20 frames elided …"]
    assert cut_stacks(merged).seconds == 0.02


def test_every_export_names_the_marker():
    prof = build(_deep_snapshot())
    label = "… 10-200 frames elided …"
    assert frame_label(next(f for f in prof["stacks"]["frames"] if "elided" in f)) == label
    folded = collapsed.render(prof).decode()
    assert f";run (work.py:2);{label};run (work.py:2);" in folded
    shared = speedscope.to_dict(prof)["shared"]["frames"]
    assert {"name": label, "file": "", "line": 0} in shared
    assert label.encode() in gzip.decompress(pprof.render(prof))
    flame = json.dumps(page_data(prof)["flame"], ensure_ascii=False)
    assert label in flame


def test_a_profile_without_markers_reads_as_before():
    prof = build()
    assert cut_stacks(prof) == (0.0, 0.0, 0.08, 0, False, 0, 0, 0)
    assert not any("elided" in f for f in prof["stacks"]["frames"])
    validate(json.loads(json.dumps(prof)))


def test_profile_decorator_filtering_reads_past_a_marker():
    # @profile under the CLI keeps the stacks charged to a marked function: the innermost
    # user frame of each, here past the marker (the innermost frames are a library's).
    from heatline.engine import marked

    def run():
        pass

    snap = snapshot()
    snap["files"] = [*snap["files"], {"path": "/lib/site.py", "user": False}]
    snap["functions"] = [*snap["functions"], {"file": 2, "name": "visit", "qualname": "visit",
                                              "first_line": 1}]
    snap["functions"][1] = {"file": 1, "name": "run", "qualname": "run",
                            "first_line": run.__code__.co_firstlineno}
    snap["files"][1] = {"path": run.__code__.co_filename, "user": True}
    library = ((3, 2),) * INNER
    snap["stacks"] = [(((2, 9), (0, 4), (1, 2), (ELIDED_LOST, 50), *library), 0, MS, 0, 0),
                      (((2, 9), (0, 4), (ELIDED_LOST, 50), *library), 0, MS, 0, 0)]
    saved = set(marked._marked)
    try:
        marked.profile(run)
        kept = marked.keep_marked(snap)
    finally:
        marked._marked.clear()
        marked._marked.update(saved)
    assert kept["stacks"] == snap["stacks"][:1]  # charged to run; the other to main
