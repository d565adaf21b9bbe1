"""data/model.py: the profile's types agree with docs/profile-format.md's tables, key for key,
and the profiles heatline writes match the types exactly (no missing key, no unknown one, no
value of another type)."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from heatline.data import model

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "profile-format.md"
TARGETS = ROOT / "tests" / "targets"

# The tables of the format's reference, by (heading, ordinal under it), that list each type's
# keys: the type's keys are the union of its tables' keys.
TABLES = {
    model.Profile: [("Top level", 0), ("Child processes: `processes`, `process_profiles`", 0)],
    model.Totals: [("`totals`", 0)],
    model.MemoryOn: [("`memory`", 0)],
    model.ThreadRecord: [("`threads`", 0)],
    model.FileRecord: [("`files`", 0)],
    # "Every line object also has the memory fields below ... and the GPU fields".
    model.LineRecord: [("`files`", 1), ("Memory fields of lines and functions", 0),
                       ("GPU fields of lines and functions", 0)],
    model.FunctionRecord: [("`files`", 2)],
    model.MemoryFields: [("Memory fields of lines and functions", 0)],
    model.GpuFields: [("GPU fields of lines and functions", 0)],
    model.GpuOn: [("`gpu`", 0)],
    model.GpuDevice: [("`gpu`", 1)],
    model.Stacks: [("`stacks`", 0)],
    model.ElidedFrame: [("`stacks`", 1)],
    model.ProcessRecord: [("Child processes: `processes`, `process_profiles`", 1)],
    model.Region: [("`regions`", 0)],
    model.Module: [("`modules`", 0)],
    model.Task: [("`tasks`", 0)],
    model.Steps: [("`steps`", 0)],
}
# A row naming a group of fields instead of keys (the function table's "GPU fields").
GROUPS = {"GPU fields": model.GpuFields, "memory fields": model.MemoryFields}
# Objects the reference describes in a sentence instead of a table: the text that describes
# each (a table row's key, or the start of a paragraph), which must name every key.
PROSE = {
    model.Asyncio: "`asyncio`",
    model.Attached: "`attached`",
    model.SummaryItem: "`summary`",
    model.Place: "`alloc_peak_at`",
    model.PeakPlace: "`peak_at`",
    model.CombinedPeak: "`combined_peak`",
    model.HeldLine: "`combined_peak`",
    model.Kernel: "A kernel:",
    model.KernelLine: "A kernel:",
    model.NativeFunction: "`native_functions`",
    model.Leak: "`leak`",
    model.NativeFrame: "**Native frames.**",
    model.FunctionFrame: "`frames`",
    model.StackEntry: "`entries`",
    model.RegionLine: "`top_lines`",
    model.TaskLine: "`lines`",
}
# A key set the types share (checked with them), and the "off" halves of memory and gpu
# (`{"enabled": false}`, checked by the validator's own test).
COVERED_OTHERWISE = {model.TimeFields, model.MemoryOff, model.GpuOff, model.LabelMemory}


def _doc_sections():
    """{heading: [table rows]}: each table a list of (first cell, whole row) by its heading."""
    sections: dict[str, list[list[tuple[str, str]]]] = {}
    heading = None
    table = None
    for line in DOC.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
            sections.setdefault(heading, [])
            table = None
        elif line.startswith("|"):
            cells = [cell.strip() for cell in line.strip("|").split("|")]
            if table is None:
                table = []
                sections[heading].append(table)
            elif not set(cells[0]) <= set("- ") and cells[0] != "key":
                table.append((cells[0], line))
        else:
            table = None
    return sections


def _paragraphs():
    return [block.replace("\n", " ") for block in DOC.read_text(encoding="utf-8").split("\n\n")]


def _table_keys(rows):
    keys = set()
    for first, _ in rows:
        named = re.findall(r"`([a-z_0-9]+)`", first)
        if named:
            keys.update(named)
        else:
            group = GROUPS[first]
            keys.update(model.keys_of(group)[0] | model.keys_of(group)[1])
    return keys


def _model_keys(typed_dict):
    required, optional = model.keys_of(typed_dict)
    return required | optional


def test_every_type_of_the_model_is_checked_against_the_reference():
    types = {value for value in vars(model).values() if model._is_typed_dict(value)}
    types = {t for t in types if not t.__name__.startswith("_")}
    assert types == set(TABLES) | set(PROSE) | COVERED_OTHERWISE


@pytest.mark.interpreter_independent
@pytest.mark.parametrize("typed_dict", list(TABLES), ids=lambda t: t.__name__)
def test_the_reference_tables_list_exactly_the_models_keys(typed_dict):
    sections = _doc_sections()
    documented = set()
    for heading, ordinal in TABLES[typed_dict]:
        documented |= _table_keys(sections[heading][ordinal])
    assert documented == _model_keys(typed_dict)


@pytest.mark.interpreter_independent
@pytest.mark.parametrize("typed_dict", list(PROSE), ids=lambda t: t.__name__)
def test_the_reference_names_every_key_of_the_objects_it_describes_in_words(typed_dict):
    marker = PROSE[typed_dict]
    texts = [line for line in DOC.read_text(encoding="utf-8").splitlines()
             if line.startswith(f"| {marker}")] or \
        [p for p in _paragraphs() if p.startswith(marker)]
    assert texts, marker
    text = " ".join(texts)
    missing = {key for key in _model_keys(typed_dict) if not re.search(rf"\b{key}\b", text)}
    assert not missing


@pytest.mark.interpreter_independent
def test_the_optional_keys_are_those_the_reference_calls_optional():
    rows = dict(_doc_sections()["Top level"][0])
    for key in model.keys_of(model.Profile)[1]:
        row = next(line for first, line in rows.items() if f"`{key}`" in first)
        assert "ptional" in row, key
    for key in model.keys_of(model.Profile)[0]:
        row = next(line for first, line in rows.items() if f"`{key}`" in first)
        assert "optional" not in row.split("|")[2], key


@pytest.mark.interpreter_independent
def test_the_validator_reports_missing_unknown_and_mistyped_keys():
    line = {"line": 3, "source": "x = 1", "function": None,
            **dict.fromkeys(model.keys_of(model.TimeFields)[0], 0.0),
            **dict.fromkeys(model.keys_of(model.MemoryFields)[0], 0),
            "timeline": [[0.5, 10]], "leak": None,
            **dict.fromkeys(model.keys_of(model.GpuFields)[0], 0)}
    assert model.mismatches(line, model.LineRecord) == []
    broken = {**line, "source": 3, "extra": 1, "timeline": [[0.5]], "leak": {"likelihood": 1}}
    del broken["line"]
    assert sorted(model.mismatches(broken, model.LineRecord)) == [
        "profile.leak: missing growth_bytes_per_s",
        "profile.source: should be a string, not int",
        "profile.timeline[0]: should be a list of 2",
        "profile: missing line",
        "profile: unknown extra",
    ]
    assert model.mismatches({**line, "python_s": True}, model.LineRecord) == [
        "profile.python_s: should be a number, not bool"]
    assert model.mismatches({"enabled": False}, model.MemorySection) == []
    assert model.mismatches({"enabled": False, "samples": 3}, model.MemorySection) != []


def _run(tmp_path, name, *args, options=()):
    out = tmp_path / f"{name}.json"
    done = subprocess.run(
        [sys.executable, "-m", "heatline", "-q", "-o", str(out), *options,
         str(TARGETS / name), *args],
        capture_output=True, text=True, timeout=300, check=False, cwd=tmp_path)
    assert out.exists(), done.stderr
    return json.loads(out.read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    "name, args, options",
    [
        ("busy.py", (), ()),
        ("busy.py", (), ("--cpu-only",)),
        ("threads.py", (), ()),
        ("memory.py", (), ()),
        ("summary_memory.py", ("leak",), ()),
        ("deep_recursion.py", ("deep.out",), ()),
        ("asyncio_awaits.py", ("awaits.out",), ()),
    ],
)
def test_profiles_of_real_runs_match_the_model(tmp_path, name, args, options):
    profile = _run(tmp_path, name, *args, options=options)
    assert profile["files"]
    assert model.mismatches(profile) == []


def test_a_merged_profile_and_each_process_profile_match_the_model(tmp_path):
    profile = _run(tmp_path, "mem_fork.py")
    assert len(profile["processes"]) > 1
    assert any("pid" in thread for thread in profile["threads"])  # a child's threads
    assert model.mismatches(profile) == []


def test_a_profile_merged_across_an_exec_matches_the_model(tmp_path):
    profile = _run(tmp_path, "mem_exec.py", "thread")
    assert profile["files"] and profile["memory"]["enabled"]
    assert model.mismatches(profile) == []


def test_a_profile_view_writes_again_matches_the_model(tmp_path):
    _run(tmp_path, "busy.py")
    again = tmp_path / "again.json"
    subprocess.run([sys.executable, "-m", "heatline", "view", "--format", "json", "-o",
                    str(again), str(tmp_path / "busy.py.json")], check=True, timeout=120,
                   capture_output=True)
    assert model.mismatches(json.loads(again.read_text(encoding="utf-8"))) == []


def test_synthetic_gpu_profiles_match_the_model():
    """No GPU here: gpu.py's fields from a synthetic engine snapshot (tests/unit/
    test_gpu_report.py's)."""
    import test_gpu_report as gpu_test
    from test_profile import MS, build, snapshot

    kernel = {"raw_name": "_Zk", "name": "k()", "calls": 4, "gpu_ns": 8 * MS,
              "lines": [((0, 4, 0), 3, 7 * MS), (None, 1, MS)], "other_lines_calls": 0,
              "other_lines_gpu_ns": 0}
    gpu = gpu_test.gpu_part(
        lines=[gpu_test.line((0, 4, 0), 7 * MS, launches=3, h2d=100, d2h=20, other=5)],
        kernels=[kernel], alloc_peak_bytes=4096,
        alloc_peak_at={"file": 0, "line": 5, "t_ns": 5 * MS})
    profile = build(snapshot(gpu=gpu))
    assert profile["gpu"]["enabled"] and profile["gpu"]["kernels"]
    assert model.mismatches(profile) == []
    assert model.mismatches(build(snapshot())) == []
