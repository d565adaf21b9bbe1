"""The memory targets' truths are right (tests/targets/memory*.py, _memtruth.py).

These check the ground truth, not heatline: each target's numbers by construction against an
independent measurement of the same program run with plain python. tracemalloc measures every
tagged line and the exact peak; an LD_PRELOAD probe of memcpy/memmove (tests/targets/
_copyprobe.c) measures copies. test_memory_accuracy.py then judges heatline against these
truths.
"""

import json
import os
import shutil
import subprocess
import sys

import pytest

pytest.importorskip("numpy")
# Nothing here runs heatline: under the sanitizer build these would only repeat themselves.
pytestmark = pytest.mark.skipif(
    bool(os.environ.get("HEATLINE_SANITIZED")), reason="checks the truth, not the engine"
)

TARGETS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "targets")
MB = 1_000_000


def _run_target(name, tmp_path, mode, extra_env=None):
    truth_path = tmp_path / f"{name}.{mode or 'plain'}.json"
    env = dict(os.environ)
    env.pop("HEATLINE_TARGET_SCALE", None)
    env.update({"HEATLINE_TRUTH": str(truth_path), "HEATLINE_TRUTH_MODE": mode})
    env.update(extra_env or {})
    result = subprocess.run(
        [sys.executable, os.path.join(TARGETS, name)], env=env, capture_output=True, text=True,
        timeout=300, check=False,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(truth_path.read_text())


_traced = {}


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    """traced(name): the target's truth from a tracemalloc run (one run per target)."""

    def get(name):
        if name not in _traced:
            _traced[name] = _run_target(name, tmp_path_factory.mktemp("truth"), "tracemalloc")
        return _traced[name]

    return get


def _slack(entry, per_call=4096):
    """What the constructions leave out, per run of a line: numpy's ndarray object (~100
    bytes), the float free list (at most 100 recycled floats), the tracer's own tuples; and
    what the target declares (slack_bytes)."""
    total = entry["alloc_python_bytes"] + entry["alloc_native_bytes"]
    return per_call * entry["calls"] + total // 10_000 + entry["slack_bytes"]


@pytest.mark.parametrize("name", ["memory.py", "memory_raw.py"])
def test_each_line_allocates_what_its_truth_says(traced, name):
    truth = traced(name)
    assert truth["lines"], "no tagged line ran"
    errors = []
    for number, entry in truth["lines"].items():
        built = entry["alloc_python_bytes"] + entry["alloc_native_bytes"]
        measured = entry["measured"]
        # A spike line frees its memory before it ends: what it allocated shows as its peak.
        got = measured["peak_growth_bytes"] if entry["kind"] == "spike" else measured["net_bytes"]
        if abs(got - built) > _slack(entry):
            errors.append(f"line {number} ({entry['tag']}): tracemalloc {got} vs truth {built}")
        # No line holds a large hidden temporary on top of what it keeps.
        grew = measured["peak_growth_bytes"]
        if entry["kind"] != "leak" and grew > entry["peak_bytes"] + _slack(entry):
            errors.append(f"line {number} ({entry['tag']}): peak growth {grew}")
    assert not errors, "\n".join(errors)


def test_memory_target_peak_is_the_spike_line(traced):
    truth = traced("memory.py")
    peak = truth["peak"]
    assert peak["line"] == truth["spike"]["line"]
    # The exact peak is the live memory the target knows of, plus what importing numpy and
    # the interpreter's own bookkeeping keep alive: a few MB.
    assert 0 <= peak["bytes"] - truth["peak_construction_bytes"] < 16 * MB, peak
    # Nothing else comes close: the peak is unambiguous.
    spike = truth["lines"][str(peak["line"])]
    assert spike["peak_bytes"] > 0.4 * peak["bytes"]


def test_memory_raw_target_peak_is_its_last_scratch_decoder(traced):
    truth = traced("memory_raw.py")
    scratch = next(n for n, e in truth["lines"].items() if e["tag"] == "lzma_scratch")
    assert truth["peak"]["line"] == int(scratch)
    assert 0 <= truth["peak"]["bytes"] - truth["peak_construction_bytes"] < 4 * MB, truth["peak"]


def test_memory_threads_target_peak_is_what_all_threads_hold(traced):
    truth = traced("memory_threads.py")
    assert 0 <= truth["peak"]["bytes"] - truth["peak_construction_bytes"] < 16 * MB, truth["peak"]


def test_copies_of_memory_target_are_what_its_truth_says(tmp_path):
    compiler = shutil.which("gcc") or shutil.which("cc")
    if compiler is None:
        pytest.skip("needs a C compiler for the copy probe")
    probe = tmp_path / "copyprobe.so"
    subprocess.run(
        [compiler, "-O1", "-fno-builtin", "-shared", "-fPIC", "-o", str(probe),
         os.path.join(TARGETS, "_copyprobe.c"), "-ldl"],
        check=True,
    )
    truth = _run_target("memory.py", tmp_path, "copyprobe", {"LD_PRELOAD": str(probe)})
    errors = []
    for number, entry in truth["lines"].items():
        got = entry["measured"]["copy_bytes"]
        if abs(got - entry["copy_bytes"]) > _slack(entry):
            want = entry["copy_bytes"]
            errors.append(f"line {number} ({entry['tag']}): probe {got} vs truth {want}")
    assert not errors, "\n".join(errors)
    assert sum(e["copy_bytes"] for e in truth["lines"].values()) > 500 * MB


@pytest.mark.parametrize("name", ["memory.py", "memory_threads.py", "memory_raw.py"])
def test_truth_file_is_complete(tmp_path, name):
    truth = _run_target(name, tmp_path, "")
    tags = {entry["tag"] for entry in truth["lines"].values()}
    assert len(tags) == len(truth["lines"])
    assert truth["leaks"] and truth["not_leaks"]
    assert set(truth["leak_rates"]) == {str(n) for n in truth["leaks"]}
    for entry in truth["lines"].values():
        total = entry["alloc_python_bytes"] + entry["alloc_native_bytes"]
        assert entry["growth_bytes"] + entry["freed_bytes"] == total
        assert 0 < entry["peak_bytes"] <= total
        assert entry["function"]
    # Every line that is judged allocates enough for sampling to be tight (see
    # test_memory_accuracy.py), and the run stays small.
    assert truth["peak_construction_bytes"] < 1_000 * MB
