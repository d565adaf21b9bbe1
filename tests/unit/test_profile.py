"""Profile files (heatline.data) and the snapshot -> profile conversion
(heatline.data.build), without the engine."""

import json
import os

import pytest

from heatline import data as profile
from heatline.data import build as profile_build
from heatline.data import ProfileError

# Nothing checked here depends on the CPython version: runs on the main CPython and under ASan,
# not on every version (Makefile, suite-3.X).
pytestmark = pytest.mark.interpreter_independent

MS = 1_000_000  # nanoseconds

SOURCES = {
    "/src/app.py": ["import work", "", "def main():", "    work.run()", "    print('done')"],
    "/src/work.py": ["def run():", "    x = sum(range(10**6))", "    return x"],
}


def snapshot(**overrides):
    """A synthetic engine snapshot: app.py:4 calls work.py:2; main thread and one worker."""
    snap = {
        "samples": 10,
        "sampled_ns": 100 * MS,
        "sampling_interval_ns": 10 * MS,
        "lost_ns": 0,
        "files": [{"path": "/src/app.py", "user": True}, {"path": "/src/work.py", "user": True}],
        "functions": [
            {"file": 0, "name": "main", "qualname": "main", "first_line": 3},
            {"file": 1, "name": "run", "qualname": "run", "first_line": 1},
            {"file": 0, "name": "<module>", "qualname": "<module>", "first_line": 1},
        ],
        # (file, line, function, python_ns, native_ns, system_ns)
        "lines": [
            (1, 2, 1, 50 * MS, 10 * MS, 0),
            (0, 4, 0, 0, 0, 20 * MS),
            (0, 5, 0, 5 * MS, 0, 0),
            (0, 1, 2, 0, 15 * MS, 0),
        ],
        "threads": [
            {
                "native_id": 11,
                "main": True,
                "python_ns": 55 * MS,
                "native_ns": 25 * MS,
                "system_ns": 20 * MS,
                "unattributed_ns": 7 * MS,
                "cpu_ns": 80 * MS,
                "engine_wait_ns": 5 * MS,
            },
            {
                "native_id": 12,
                "main": False,
                "python_ns": 0,
                "native_ns": 0,
                "system_ns": 0,
                "unattributed_ns": 3 * MS,
                "cpu_ns": 1 * MS,
                "engine_wait_ns": 0,
            },
        ],
        "stacks": [
            (((2, 9), (0, 4), (1, 2)), 0, 50 * MS, 10 * MS, 0),
            (((2, 9), (0, 4)), 0, 0, 0, 20 * MS),
        ],
        "stacks_dropped_ns": 0,
        "stacks_frameless_ns": 0,
    }
    snap.update(overrides)
    return snap


def build(snap=None, sources=SOURCES, **run):
    """The profile of `snap`; `run` overrides the run's figures (elapsed_s, steal_s...)."""
    figures = dict(
        program="/src/app.py",
        argv=["app.py", "-v"],
        started_at="2024-01-01T00:00:00.000Z",
        elapsed_s=0.1234567,
        cpu_s=0.08,
        sampling_interval_s=0.01,
    )
    figures.update(run)
    return profile_build.build_profile(
        snap or snapshot(), read_lines=lambda path: sources.get(path, []), **figures
    )


# --- snapshot -> profile ------------------------------------------------------------------


def test_percentages_are_shares_of_all_attributed_time():
    prof = build()
    # attributed = 50+10 + 20 + 5 + 15 = 100 ms
    assert prof["totals"] == {
        "python_s": 0.055,
        "native_s": 0.025,
        "system_s": 0.02,
        "cpu_wait_s": 0.0,
        "attributed_s": 0.1,
        "unattributed_s": 0.01,
    }
    work = prof["files"]["/src/work.py"]
    assert (work["python_pct"], work["native_pct"], work["system_pct"]) == (50.0, 10.0, 0.0)
    line2 = work["lines"][1]
    assert line2["line"] == 2 and line2["source"] == "    x = sum(range(10**6))"
    assert (line2["python_s"], line2["native_s"]) == (0.05, 0.01)
    assert (line2["python_pct"], line2["native_pct"], line2["system_pct"]) == (50.0, 10.0, 0.0)
    app = prof["files"]["/src/app.py"]
    assert (app["python_pct"], app["native_pct"], app["system_pct"]) == (5.0, 15.0, 20.0)


def test_file_percentages_sum_to_100():
    prof = build()
    total = sum(
        f[k + "_pct"] for f in prof["files"].values() for k in ("python", "native", "system")
    )
    assert total == pytest.approx(100.0)


def test_files_are_ordered_by_time_and_list_every_source_line():
    prof = build()
    assert list(prof["files"]) == ["/src/work.py", "/src/app.py"]
    app_lines = prof["files"]["/src/app.py"]["lines"]
    assert [line["line"] for line in app_lines] == [1, 2, 3, 4, 5]
    assert [line["source"] for line in app_lines] == SOURCES["/src/app.py"]
    idle = app_lines[2]
    assert idle["python_s"] == idle["native_s"] == idle["system_s"] == idle["python_pct"] == 0


def test_function_time_is_the_sum_of_its_lines():
    prof = build()
    functions = {f["qualname"]: f for f in prof["files"]["/src/app.py"]["functions"]}
    assert set(functions) == {"main", "<module>"}
    main = functions["main"]
    assert (main["python_s"], main["native_s"], main["system_s"]) == (0.005, 0.0, 0.02)
    assert (main["python_pct"], main["system_pct"], main["first_line"]) == (5.0, 20.0, 3)
    assert main["name"] == "main"
    # Sorted by total time: main (25 ms) before <module> (15 ms).
    assert [f["qualname"] for f in prof["files"]["/src/app.py"]["functions"]] == [
        "main",
        "<module>",
    ]


def test_cells_of_one_line_from_several_code_objects_are_merged():
    snap = snapshot()
    snap["functions"].append({"file": 0, "name": "main", "qualname": "main", "first_line": 3})
    snap["lines"].append((0, 5, 3, 5 * MS, 0, 0))  # same line, second code object of main
    prof = build(snap)
    app = prof["files"]["/src/app.py"]
    assert app["lines"][4]["python_s"] == 0.01
    assert [f["qualname"] for f in app["functions"]].count("main") == 1


def test_files_with_no_time_are_left_out():
    snap = snapshot()
    snap["files"].append({"path": "/lib/idle.py", "user": False})
    assert "/lib/idle.py" not in build(snap)["files"]


def test_files_list_lines_with_cost_their_context_and_function_first_lines():
    long_source = [f"x{i} = {i}" for i in range(1, 1001)]
    snap = snapshot()
    snap["lines"].append((1, 500, 1, 1 * MS, 0, 0))
    prof = build(snap, sources={**SOURCES, "/src/work.py": long_source})
    lines = prof["files"]["/src/work.py"]["lines"]
    # Cost on lines 2 and 500, two lines of context each side, and run()'s first line (1).
    listed = [1, 2, 3, 4, 498, 499, 500, 501, 502]
    assert [line["line"] for line in lines] == listed
    assert [line["source"] for line in lines] == [long_source[n - 1] for n in listed]
    assert [line["python_s"] for line in lines] == [0, 0.05, 0, 0, 0, 0, 0.001, 0, 0]


def test_context_stops_at_the_end_of_the_file():
    short = {"/src/work.py": ["def run():", "    x = 1"], "/src/app.py": SOURCES["/src/app.py"]}
    lines = build(sources=short)["files"]["/src/work.py"]["lines"]
    assert [line["line"] for line in lines] == [1, 2]


def test_unreadable_source_gives_empty_source_text():
    prof = build(sources={})
    assert [line["source"] for line in prof["files"]["/src/app.py"]["lines"]] == ["", "", ""]


def test_source_lines_are_read_without_line_endings_as_the_compiler_numbers_them(tmp_path):
    path = tmp_path / "mixed.py"
    path.write_bytes(b"a = 1\r\nb = 2\n# \xc3\xa9t\xc3\xa9\r\n\nc = 3")
    lines = profile_build.read_source_lines(str(path))
    assert len(lines) == 5
    expected = ["a = 1", "b = 2", "# \u00e9t\u00e9", "", "c = 3"]
    assert [lines[i] for i in range(len(lines))] == expected
    assert len(profile_build.read_source_lines(str(tmp_path / "missing.py"))) == 0


def test_only_the_listed_lines_of_a_large_source_are_stripped(tmp_path, monkeypatch):
    """A large program's end of run: the profile lists the lines with cost and their
    context, so only those are made into line texts (bench/end_of_run.py)."""
    import linecache

    class Counted(str):
        stripped = 0

        def rstrip(self, chars=None):
            Counted.stripped += 1
            return str.rstrip(self, chars)

    path = tmp_path / "big.py"
    path.write_text("".join(f"x = {i}\n" for i in range(20_000)))
    real = linecache.getlines
    monkeypatch.setattr(linecache, "getlines",
                        lambda p, *rest: [Counted(t) for t in real(p, *rest)])
    files = [{"path": str(path), "user": True}, {"path": "/src/work.py", "user": True}]
    snap = snapshot(files=files, lines=[(0, 10_000, 2, 5 * MS, 0, 0)])
    prof = profile_build.build_profile(snap, program="p", argv=[], started_at="", elapsed_s=1.0,
                                       cpu_s=1.0, sampling_interval_s=0.01)
    listed = prof["files"][str(path)]["lines"]
    assert {line["line"]: line["source"] for line in listed}[10_000] == "x = 9999"
    assert Counted.stripped == len(listed)


def test_profiles_are_encoded_by_jsons_c_encoder(monkeypatch):
    """json's pure-Python encoder (which json.dumps runs with an indent) took most of a large
    program's end of run: the profile is written without indentation, by the C encoder."""
    import json.encoder

    def refuse(*args, **kwargs):
        raise AssertionError("json's pure-Python encoder was used")

    monkeypatch.setattr(json.encoder, "_make_iterencode", refuse)
    prof = build()
    assert json.loads(profile.encode(prof)) == json.loads(json.dumps(prof))


def test_the_profile_text_is_json_dumps_text_without_importing_json():
    """data/io.py writes with json's C encoder called directly (importing json costs every
    run's end 31 M instructions): the very text json.dumps(..., ensure_ascii=False,
    separators=(",", ":")) gives, for every kind of value a profile holds and more, and the same
    errors."""
    from heatline.data.io import _to_json

    values = [
        build(),
        {"é": ["\u2603", "\udcff tail", "tab\t\"quote\"\\", "\x00\x1f", ""], 3: None, 2.5: True,
         False: -0.0, None: [1e300, -1e-300, 0.1, 1 / 3, 2**70, -2**63, float("nan"),
                             float("inf"), -float("inf")]},
        [[[]], {}, (1, 2), "", 0],
    ]
    for value in values:
        assert _to_json(value) == json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    with pytest.raises(TypeError, match="Object of type set is not JSON serializable"):
        _to_json({"a": {1}})
    looped = []
    looped.append(looped)
    with pytest.raises(ValueError):
        _to_json(looped)
    with pytest.raises(TypeError):
        _to_json({(1, 2): 3})
    # Lone surrogates (PEP 383) stay escapes in the bytes, and read back as the same strings.
    assert json.loads(profile.encode({"p": "\udcff"})) == {"p": "\udcff"}


def test_seconds_are_rounded_to_6_decimals_and_percentages_to_3():
    snap = snapshot(lines=[(0, 1, 2, 1, 0, 0), (0, 4, 0, 2, 0, 0)])  # 1 ns and 2 ns
    prof = build(snap)
    lines = prof["files"]["/src/app.py"]["lines"]
    assert lines[0]["python_s"] == 0.0  # 1e-9 s rounds away
    assert lines[0]["python_pct"] == 33.333
    assert lines[3]["python_pct"] == 66.667
    assert prof["elapsed_s"] == 0.123457


def test_run_metadata_and_threads():
    prof = build()
    assert prof["schema_version"] == profile.SCHEMA_VERSION
    assert prof["program"] == "/src/app.py" and prof["argv"] == ["app.py", "-v"]
    assert (prof["samples"], prof["sampled_s"], prof["sampling_interval_s"]) == (10, 0.1, 0.01)
    assert prof["threads"][0] == {
        "native_id": 11,
        "main": True,
        "python_s": 0.055,
        "native_s": 0.025,
        "system_s": 0.02,
        "unattributed_s": 0.007,
        "cpu_s": 0.08,
        "engine_wait_s": 0.005,
    }
    assert prof["warnings"] == []  # 5 ms of 110 ms waiting for heatline's lock: below 5%
    profile.validate(prof)


def test_stacks_share_one_frame_table():
    stacks = build()["stacks"]
    frames = stacks["frames"]
    assert frames[0] == {
        "file": "/src/app.py",
        "name": "<module>",
        "qualname": "<module>",
        "line": 9,
    }
    assert [frames[i]["qualname"] for i in stacks["entries"][0]["stack"]] == [
        "<module>",
        "main",
        "run",
    ]
    assert stacks["entries"][1]["stack"] == stacks["entries"][0]["stack"][:2]
    assert stacks["entries"][1] == {
        "stack": [0, 1],
        "thread": 0,
        "python_s": 0.0,
        "native_s": 0.0,
        "system_s": 0.02,
        "cpu_wait_s": 0.0,
    }
    assert stacks["dropped_s"] == 0.0


def test_nothing_attributed_gives_zero_percentages_and_a_warning():
    snap = snapshot(lines=[], stacks=[])
    prof = build(snap)
    assert prof["files"] == {}
    assert prof["totals"]["attributed_s"] == 0.0
    assert any("--profile-all" in warning for warning in prof["warnings"])


def test_lost_and_dropped_time_are_reported_as_warnings():
    prof = build(snapshot(lost_ns=50 * MS, stacks_dropped_ns=3 * MS))
    assert prof["lost_s"] == 0.05
    assert prof["stacks"]["dropped_s"] == 0.003
    assert len(prof["warnings"]) == 2


def test_a_thread_waiting_long_for_heatlines_lock_is_a_warning():
    # 20 ms of the threads' 110 ms: a share that matters, at 1 ms sampling (10 intervals).
    snap = snapshot(sampling_interval_ns=1 * MS)
    snap["threads"][0]["engine_wait_ns"] = 20 * MS
    (warning,) = build(snap)["warnings"]
    assert warning.startswith("threads waited 0.020 s (18.2% of their time) for heatline's own")


def test_waiting_for_heatlines_lock_below_what_the_samples_resolve_is_no_warning():
    # At 10 ms sampling 20 ms is two samples: below the sampling error of any busy line.
    snap = snapshot()
    snap["threads"][0]["engine_wait_ns"] = 20 * MS
    assert build(snap)["warnings"] == []
    # A few ms of waiting in a short run (here 4 ms, 6.7% of its 60 ms of thread time).
    snap = snapshot(sampling_interval_ns=1 * MS)
    snap["threads"][0].update(python_ns=30 * MS, native_ns=10 * MS, system_ns=10 * MS,
                              engine_wait_ns=4 * MS)
    assert build(snap)["warnings"] == []


def test_steal_time_is_recorded_and_a_warning_once_it_is_a_share_of_the_machine():
    assert "steal_s" not in build()  # where /proc/stat gives none
    quiet = build(steal_s=0.0, cpu_count=2)
    assert quiet["steal_s"] == 0.0 and quiet["warnings"] == []
    # 2 CPUs x 10 s: 0.9 s stolen is 4.5%, under the 5% that warns; 1.1 s (5.5%) warns.
    assert build(elapsed_s=10.0, steal_s=0.9, cpu_count=2)["warnings"] == []
    (warning,) = build(elapsed_s=10.0, steal_s=1.1, cpu_count=2)["warnings"]
    assert warning.startswith("the hypervisor took 1.10 s of this machine's CPU time during the "
                              "run (steal time, 5.5% of its 2 CPUs)")
    # A short run: 0.2 s is 10% of 2 CPUs x 1 s, but under the 0.25 s a warning needs.
    assert build(elapsed_s=1.0, steal_s=0.2, cpu_count=2)["warnings"] == []


def test_machine_steal_time_is_the_steal_field_of_proc_stat_in_seconds():
    from heatline.engine import session

    with open("/proc/stat") as f:
        before = int(f.readline().split()[8]) / os.sysconf("SC_CLK_TCK")
    got = session.machine_steal_s()
    with open("/proc/stat") as f:
        after = int(f.readline().split()[8]) / os.sysconf("SC_CLK_TCK")
    assert before <= got <= after


def test_profiled_periods_in_seconds_and_a_warning_when_some_were_not_kept():
    periods = [[0, 20 * MS], [50 * MS, 100 * MS]]
    prof = build(snapshot(profiled_periods=periods, profiled_periods_count=2,
                          profiled_periods_dropped_changes=0))
    assert prof["profiled_periods"] == [[0.0, 0.02], [0.05, 0.1]]
    assert not any("too often" in warning for warning in prof["warnings"])
    for more in ({"profiled_periods_count": 3}, {"profiled_periods_dropped_changes": 1}):
        overrides = {"profiled_periods": periods, "profiled_periods_count": 2,
                     "profiled_periods_dropped_changes": 0, **more}
        prof = build(snapshot(**overrides))
        assert any("too often" in warning for warning in prof["warnings"]), more
    assert "profiled_periods" not in build()  # a snapshot without the record


def test_a_run_never_paused_is_reported_whole_however_long_its_stop_took():
    """The one period ends when sampling stopped; elapsed_s a little later, after the stop's own
    work, which took 71 ms of a 0.247 s run on a loaded machine (and more under more load): the
    engine's record of whether profiling was ever off decides, not the size of that gap."""
    from heatline.data.queries import profiled_s

    whole = build(snapshot(profiled_periods=[[0, 176 * MS]], profiled_was_paused=False),
                  elapsed_s=0.247)
    assert whole["paused"] is False and profiled_s(whole) is None
    paused = build(snapshot(profiled_periods=[[0, 240 * MS]], profiled_was_paused=True),
                   elapsed_s=0.247)
    assert paused["paused"] is True and profiled_s(paused) == 0.24  # paused 7 ms before the end
    older = {"profiled_periods": [[0.0, 0.176]], "elapsed_s": 0.247}  # a file without "paused"
    assert profiled_s(older) == 0.176 and profiled_s({**older, "elapsed_s": 0.2}) is None


def test_time_with_no_frame_to_record_is_dropped_from_stacks_without_a_warning():
    # A thread sampled with no Python frame (starting or ending): not a full stack table.
    prof = build(snapshot(stacks_dropped_ns=3 * MS, stacks_frameless_ns=3 * MS))
    assert prof["stacks"]["dropped_s"] == 0.003
    assert prof["warnings"] == []
    prof = build(snapshot(stacks_dropped_ns=5 * MS, stacks_frameless_ns=3 * MS))
    assert prof["warnings"] == [
        "the stack table was full: 0.002 s of time is missing from 'stacks' "
        "(line and function times are complete)"
    ]


# --- load / dump ---------------------------------------------------------------------------


def test_dump_then_load_round_trips(tmp_path):
    path = str(tmp_path / "p.json")
    prof = build()
    profile.dump(prof, path)
    assert profile.load(path) == json.loads(json.dumps(prof))


def _load_error(tmp_path, content):
    path = tmp_path / "p.json"
    if content is not None:
        path.write_text(content if isinstance(content, str) else json.dumps(content))
    with pytest.raises(ProfileError) as info:
        profile.load(str(path))
    message = str(info.value)
    assert "\n" not in message
    assert str(path) in message
    return message


def test_load_missing_file(tmp_path):
    assert "no such file" in _load_error(tmp_path, None)


def test_load_not_json(tmp_path):
    assert "invalid JSON" in _load_error(tmp_path, "{ this is not json")


@pytest.mark.parametrize("foreign", [[1, 2], {"name": "something else"}, "text", 3])
def test_load_json_that_is_not_a_profile(tmp_path, foreign):
    assert "not a heatline profile" in _load_error(tmp_path, foreign)


def test_load_unknown_schema_version(tmp_path):
    prof = dict(build(), schema_version=99)
    assert "schema version 99" in _load_error(tmp_path, prof)


def test_load_missing_required_keys(tmp_path):
    prof = build()
    del prof["totals"], prof["files"]
    assert "missing required keys: totals, files" in _load_error(tmp_path, prof)


def test_load_file_entry_missing_keys(tmp_path):
    prof = build()
    del prof["files"]["/src/app.py"]["lines"]
    assert "lines" in _load_error(tmp_path, prof)


@pytest.mark.parametrize("field, value", [("stack", [0, 99]), ("stack", [-1]), ("thread", 5),
                                          ("thread", -1)])
def test_load_stack_entry_pointing_outside_its_tables(tmp_path, field, value):
    # Found by test_view's fuzz test: a frame index past the table passed validation and
    # `view` died with an IndexError; a negative one would have named the wrong frame.
    prof = build()
    prof["stacks"]["entries"][0][field] = value
    assert f"stacks.entries[0].{field}" in _load_error(tmp_path, prof)


def test_load_line_whose_function_is_not_a_name(tmp_path):
    # Found by test_view's fuzz test (case 645): `"function": true` passed validation and the
    # pprof export died on it.
    prof = build()
    prof["files"]["/src/app.py"]["lines"][0]["function"] = True
    assert ".lines[0].function should be null or a string" in _load_error(tmp_path, prof)


def test_version_3_profiles_are_still_read(tmp_path):
    # Version 3 listed idle lines too; the shape is the same, so heatline still shows them.
    prof = dict(build(), schema_version=3)
    path = tmp_path / "v3.json"
    path.write_text(json.dumps(prof))
    assert profile.load(str(path))["schema_version"] == 3
    assert profile.SCHEMA_VERSION == 5
    assert profile.load(str(path))["schema_version"] == 3  # nor has it `processes` (version 5)
    assert "schema version True" in _load_error(tmp_path, dict(build(), schema_version=True))
