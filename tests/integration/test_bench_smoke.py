"""Smoke test of the benchmark harness (bench/run.py, bench/render.py), so that it does not rot.

Runs plain Python and heatline on a tiny script for one round (and, in the normal build, the
ground-truth targets at a tenth of their size), and the multi-process part at its smallest
(a pool of 20 short tasks, a few children started, and in the normal build the Pool target),
checks the shape of the results JSON and that the renderer turns it into both documents. Needs
no network and no peer profiler: runners that are not installed are recorded as unavailable,
which is also checked. A second run covers the pool-cost options (the pools' CPU split by
process, --single, --phases and --other, with the heatline this interpreter imports as the
other tree) on the multi-process part alone.
"""

import importlib.util
import json
import os
import subprocess
import sys

import pytest

# Nothing checked here depends on the CPython version: runs on the main CPython and under ASan,
# not on every version (Makefile, suite-3.X).
pytestmark = pytest.mark.interpreter_independent

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH = os.path.join(ROOT, "bench")
SANITIZED = bool(os.environ.get("HEATLINE_SANITIZED"))
# The "other" tree for --other: where this interpreter's heatline is (this tree's src/ when
# installed in place, site-packages otherwise; src/ alone has no extension built for every
# CPython the suite runs on).
OTHER = os.path.dirname(os.path.dirname(importlib.util.find_spec("heatline").origin))

sys.path.insert(0, BENCH)
from heatbench import accuracy, children, tools  # noqa: E402


def _run(*args, timeout=300):
    # heatline is importable here as in the other tests (installed, or PYTHONPATH=src in-tree);
    # the harness runs it as `sys.executable -m heatline`.
    result = subprocess.run([sys.executable, *args], capture_output=True, text=True,
                            timeout=timeout, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("bench")
    out = tmp / "smoke.json"
    # Under ASan the accuracy targets only cost time: the same code runs in the normal build.
    extra = ["--skip-accuracy"] if SANITIZED else []
    _run(os.path.join(BENCH, "run.py"), "--smoke", "--tools", "heatline,heatline-cpu,py-spy",
         "--out", str(out), "--workdir", str(tmp / "work"), *extra)
    return tmp, json.loads(out.read_text())


@pytest.fixture(scope="module")
def pool(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("pool")
    out = tmp / "pool.json"
    _run(os.path.join(BENCH, "run.py"), "--smoke", "--children-only", "--skip-accuracy",
         "--skip-startup", "--single", "--phases", "--tools", "heatline",
         "--other", OTHER, "--out", str(out), "--workdir", str(tmp / "work"))
    return tmp, json.loads(out.read_text())


def test_results_have_the_documented_shape(smoke):
    _, data = smoke
    assert data["schema"] == "heatline-bench/1" and data["kind"] == "smoke"
    for key in ("started_at", "machine", "python", "git", "tools", "duration_s", "overhead"):
        assert key in data
    assert data["machine"]["cpus"] >= 1
    assert data["tools"]["python"]["available"] and data["tools"]["heatline"]["available"]
    for name, tool in data["tools"].items():
        assert tool["available"] or tool["reason"], name  # never silently dropped

    bench = data["overhead"]["benchmarks"]["smoke"]
    plain = bench["summary"]["python"]
    assert (
        plain["status"] == "ok" and plain["wall_ratio"] == 1.0 and plain["median_peak_rss_kb"] > 0
    )
    heatline = bench["summary"]["heatline"]
    assert heatline["status"] == "ok", heatline
    assert heatline["wall_ratio"] > 0 and heatline["rss_ratio"] > 0
    assert heatline["median_output_bytes"] > 0  # the profile it wrote
    run = bench["runs"]["heatline"][0]
    for key in ("wall_s", "cpu_s", "peak_rss_kb", "tree_rss_kb", "max_rss_kb", "output_bytes"):
        assert key in run
    assert data["overhead"]["per_tool"]["heatline"]["median_wall_ratio"] > 0


@pytest.mark.skipif(SANITIZED, reason="the accuracy part runs in the normal build only")
def test_accuracy_results_cover_every_truth_function(smoke):
    _, data = smoke
    assert set(data["accuracy"]["targets"]) == {"main_thread.py", "threads.py"}
    for entry in data["accuracy"]["targets"].values():
        row = entry["summary"]["heatline"]
        assert row["status"] == "ok", row
        assert set(row["share_got"]) == set(row["share_true"]) and row["share_true"]
        assert row["mean_share_error"] is not None and row["mean_split_error"] is not None
    assert data["memory_accuracy"]["status"]


def test_multi_process_part_runs_plain_python_and_heatline(smoke):
    _, data = smoke
    part = data["children"]
    assert part["tools"] == ["python", "heatline"]  # smoke: the path, not the peers
    pool = part["overhead"]["benchmarks"]["pool_fork"]["summary"]
    for name in ("python", "heatline"):
        assert pool[name]["status"] == "ok", pool[name]
        assert pool[name]["median_cpu_s"] > 0 and pool[name]["cpu_ratio"] > 0
    assert pool["heatline"]["median_output_bytes"] > 0
    startup = part["startup"]["summary"]
    for name in ("python", "heatline"):
        assert startup[name]["status"] == "ok", startup[name]
        assert startup[name]["exec_ms"] > 0 and startup[name]["spawn_ms"] > 0
    assert startup["python"]["exec_extra_ms"] == 0.0
    if SANITIZED:
        assert "accuracy" not in part
        return
    for method in ("fork", "spawn"):
        row = part["accuracy"]["targets"][method]["summary"]["heatline"]
        assert row["status"] == "ok", row
        assert row["busy_s"] > 0 and row["worker_s"] > 0  # the workers were followed
        assert row["worker_split"] and row["wait_split"]


def test_pool_cpu_is_split_by_process(pool):
    _, data = pool
    part = data["children"]
    assert part["tools"] == ["python", "heatline", "heatline@other"]
    assert "startup" not in part and "accuracy" not in part
    benches = part["overhead"]["benchmarks"]
    assert set(benches) == {"pool_fork", "pool_single"}
    for name, entry in benches.items():
        for tool in part["tools"]:
            assert entry["summary"][tool]["status"] == "ok", (name, entry["summary"][tool])
            for run in entry["runs"][tool]:
                # The three parts add up to the tree's CPU, which wait4 measured apart.
                parts = run["workers_cpu_s"] + run["main_cpu_s"] + run["after_cpu_s"]
                assert abs(parts - run["cpu_s"]) < 0.001, run
                assert run["main_cpu_s"] > 0 and run["after_cpu_s"] >= 0, run
                if name == "pool_fork":
                    assert run["workers_cpu_s"] > 0, run
                else:  # no pool: no worker
                    assert run["workers_cpu_s"] == 0, run


def test_phases_time_every_fork_child_and_the_merge(pool):
    _, data = pool
    phases = data["children"]["phases"]
    assert set(phases["summary"]) == {"heatline", "heatline@other"}  # heatline's runners only
    runs = phases["config"]["runs"]
    for tool, row in phases["summary"].items():
        assert row["status"] == "ok", (tool, row)
        assert row["start_child"]["calls"] == 2 * runs  # Pool(2): two fork workers per run
        assert row["write"]["calls"] == 2 * runs and row["write"]["median_kib"] > 0
        assert row["collect"]["calls"] == runs  # one merge, in the main process
        for phase in ("start_child", "write", "collect"):
            assert 0 < row[phase]["median_ms"] <= row[phase]["max_ms"]


def test_other_tree_runs_beside_this_one(pool):
    _, data = pool
    assert data["other"]["path"] == OTHER
    other = data["tools"]["heatline@other"]
    assert other["available"] and other["label"] == "heatline@other" and other["version"]
    result = subprocess.run([sys.executable, os.path.join(BENCH, "run.py"), "--smoke",
                             "--other", os.path.join(ROOT, "no-such-tree"), "--out", "x.json"],
                            capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip().count("\n") == 0 and "no-such-tree" in result.stderr


def test_renderer_rewrites_only_the_parts_asked_for(pool):
    tmp, _ = pool
    docs = tmp / "docs"
    with open(os.path.join(ROOT, "docs", "overhead.md")) as f:
        published = f.read()
    _run(os.path.join(BENCH, "render.py"), str(tmp / "pool.json"), "--docs-dir", str(docs),
         "--parts", "pool")
    text = (docs / "overhead.md").read_text()
    section = text.split("<!-- pool:begin -->")[1].split("<!-- pool:end -->")[0]
    assert "workers' CPU (s)" in section and "| heatline@other |" in section
    assert "pool_single" in section and "`start_child`" in section
    # The multi-process section of the published page is left as it was.
    children_part = published.split("<!-- children:begin -->")[1].split("<!-- children:end -->")[0]
    assert children_part in text


def test_py_spy_subprocess_stacks_charge_the_worker_function(tmp_path):
    # py-spy --subprocesses prefixes each stack with its process frames.
    (tmp_path / "profile.txt").write_text(
        'process 1:"python t.py";process 2:"python -c x";worker (pool.py:125);'
        "python_work (children_pool.py:24);loop (children_pool.py:19) 30\n"
        'process 1:"python t.py";process 3:"python -c x";loop (children_pool.py:18) 12\n'
        'process 1:"python t.py";<module> (children_pool.py:37);wait (threading.py:1) 50\n')
    found = children.measured_py_spy(str(tmp_path), 37)
    assert found["worker_s"] == 0.42 and found["wait_split"] is None and found["no_split"]


def test_renderer_writes_both_documents(smoke):
    tmp, _ = smoke
    docs = tmp / "docs"
    _run(os.path.join(BENCH, "render.py"), str(tmp / "smoke.json"), "--docs-dir", str(docs))
    overhead = (docs / "overhead.md").read_text()
    assert "<!-- bench:begin -->" in overhead and "<!-- bench:end -->" in overhead
    assert "| smoke |" in overhead and "heatline" in overhead
    children_part = overhead.split("<!-- children:begin -->")[1].split("<!-- children:end -->")[0]
    assert "pool_fork" in children_part and "Child start-up" in children_part
    accuracy_doc = (docs / "accuracy.md").read_text()
    assert "<!-- bench:begin -->" in accuracy_doc
    if not SANITIZED:
        assert "main_thread.py" in accuracy_doc.split("<!-- bench:begin -->")[1]
        assert "| spawn | heatline |" in accuracy_doc.split("<!-- children:begin -->")[1]
    # Rendering again replaces the generated part instead of adding another.
    _run(os.path.join(BENCH, "render.py"), str(tmp / "smoke.json"), "--docs-dir", str(docs))
    assert (docs / "overhead.md").read_text().count("<!-- bench:begin -->") == 1
    assert (docs / "overhead.md").read_text().count("<!-- children:begin -->") == 1


def test_error_measure():
    truth = {
        "a": {"wall_s": 3.0, "python_s": 3.0, "native_s": 0.0, "system_s": 0.0},
        "b": {"wall_s": 1.0, "python_s": 0.0, "native_s": 0.5, "system_s": 0.5},
    }
    measured = {"a": {"total_s": 2.0, "python_s": 2.0, "native_s": 0.0, "system_s": 0.0},
                "b": {"total_s": 2.0, "python_s": 0.0, "native_s": 2.0, "system_s": 0.0}}
    row = accuracy.compare(truth, measured, split=True)
    assert row["share_error"] == {"a": -25.0, "b": 25.0}
    assert row["max_share_error"] == 25.0 and row["mean_share_error"] == 25.0
    assert row["split_error"]["b"] == {"python_s": 0.0, "native_s": 50.0, "system_s": -50.0}
    unseen = accuracy.compare(truth, {"a": {"total_s": 1.0}}, split=False)
    assert unseen["unseen"] == ["b"] and unseen["share_got"] == {"a": 100.0, "b": 0.0}


def test_py_spy_collapsed_stacks_are_charged_to_the_innermost_target_function(tmp_path):
    (tmp_path / "profile.txt").write_text(
        "<module> (/x/t.py:9);main (/x/t.py:5);work (/x/t.py:2);helper (/lib/h.py:1) 7\n"
        "<module> (/x/t.py:9);main (/x/t.py:6) 3\n"
        "<module> (/x/other.py:1);work (/x/other.py:2) 5\n"
        " 2\n")
    found = tools.parse_py_spy(str(tmp_path), "t.py", {"work", "main"})
    assert found == {"work": {"total_s": 7.0}, "main": {"total_s": 3.0}}
