"""`heatline merge`: profiles of several runs (several hosts: a second host is faked by
editing the `host` of a copy, as the test hosts in network namespaces share the machine's host
name) joined into one. Ground truth: the pids and the wall-clock times the runs measured
themselves, and the inputs' own figures."""

import json
import os
import time

import pytest
from conftest import PROGRAMS

from heatline.data.queries import process_keys

TARGET = os.path.join(PROGRAMS, "merge_node.py")
TIME_KEYS = ("python_s", "native_s", "system_s", "cpu_wait_s")


def _run_node(run_heatline, tmp_path, name, seconds, children):
    """Run merge_node.py under heatline: (profile path, truth, wall time just before the
    launch)."""
    profile_path = tmp_path / f"{name}.json"
    truth_path = tmp_path / f"{name}.truth.json"
    launched = time.time()
    result = run_heatline("-q", "-o", str(profile_path), TARGET, str(truth_path),
                          str(seconds), str(children), timeout=300)
    assert result.returncode == 0, result.stderr.decode()
    return str(profile_path), json.loads(truth_path.read_text()), launched


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two real runs, B launched at least 0.5 s after A ended: A with one forked child."""
    from conftest import _run
    import sys

    tmp_path = tmp_path_factory.mktemp("merge")

    def run_heatline(*args, **kwargs):
        return _run([sys.executable, "-m", "heatline", *args], **kwargs)

    a = _run_node(run_heatline, tmp_path, "a", 0.3, 1)
    time.sleep(0.5)
    b = _run_node(run_heatline, tmp_path, "b", 0.2, 0)
    return tmp_path, a, b


def _load(path):
    with open(path) as file:
        return json.load(file)


def _write(path, profile):
    with open(path, "w") as file:
        json.dump(profile, file)
    return str(path)


def _merge(run_heatline, out, *inputs):
    result = run_heatline("merge", *map(str, inputs), "-o", str(out), text=True)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    return _load(out)


def _line_times(profile):
    """(file, line) -> summed time of the line over the time keys."""
    return {(path, line["line"]): sum(line.get(key, 0.0) for key in TIME_KEYS)
            for path, entry in profile["files"].items() for line in entry["lines"]}


def test_two_hosts_merge_into_one_job(runs, run_heatline, tmp_path):
    _, (a_path, a_truth, a_launched), (b_path, b_truth, b_launched) = runs
    a, b = _load(a_path), _load(b_path)
    host = a["host"]
    assert b["host"] == host and a["pid"] == a_truth["pid"] and b["pid"] == b_truth["pid"]
    b_other = _write(tmp_path / "b_other.json", dict(b, host="node-b"))
    merged = _merge(run_heatline, tmp_path / "all.json", a_path, b_other)

    # Every process once, with its host and role; the child inherits A's host.
    rows = {(p["host"], p["pid"]): p for p in merged["processes"]}
    assert len(rows) == len(merged["processes"]) == 3
    assert set(rows) == {(host, a_truth["pid"]), (host, a_truth["children"][0]),
                         ("node-b", b_truth["pid"])}
    assert rows[(host, a_truth["pid"])]["role"] == "main"
    assert rows[(host, a_truth["children"][0])]["role"] == a["processes"][1]["role"]
    assert merged["processes"][0]["pid"] == a_truth["pid"] and merged["pid"] == a_truth["pid"]
    assert merged["host"] == host

    # Clocks: B's start after A's by the difference of the start epochs, and within what the
    # runs measured: each engine started between the launch and the program's first line.
    b_start = rows[("node-b", b_truth["pid"])]["start_s"]
    assert b_start == pytest.approx(b["started_at_epoch"] - a["started_at_epoch"], abs=2e-6)
    assert b_launched - a_truth["first_line"] <= b_start <= b_truth["first_line"] - a_launched
    assert b_start >= 0.5
    child = rows[(host, a_truth["children"][0])]
    assert child["start_s"] == pytest.approx(a["processes"][1]["start_s"], abs=2e-6)
    # The job lasts from A's start to B's end; B's memory timeline is on the common clock.
    assert merged["elapsed_s"] == pytest.approx(b_start + b["elapsed_s"], abs=2e-6)
    if b["memory_timeline"]:
        assert merged["memory_timeline"][-1][0] >= b_start

    # Line times: the merged profile's are the sum of the inputs'.
    expected = {}
    for profile in (a, b):
        for key, seconds in _line_times(profile).items():
            expected[key] = expected.get(key, 0.0) + seconds
    got = _line_times(merged)
    assert set(got) == set(expected)
    for key, seconds in expected.items():
        assert got[key] == pytest.approx(seconds, abs=1e-5 * len(TIME_KEYS) * 2), key
    assert sum(got.values()) > 0
    # It is a normal profile: summary, every format, view --pid.
    assert merged["summary"]
    report = run_heatline("view", str(tmp_path / "all.json"), text=True, env={"COLUMNS": "120"})
    assert f"node-b:{b_truth['pid']}" in report.stdout
    assert f"{host}:{a_truth['pid']}" in report.stdout
    page = run_heatline("view", "--format", "html", str(tmp_path / "all.json"), text=True)
    assert "main on node-b" in page.stdout
    for fmt in ("terminal", "html", "json", "collapsed", "speedscope", "pprof", "chrome"):
        shown = run_heatline("view", "--format", fmt, str(tmp_path / "all.json"))
        assert shown.returncode == 0, (fmt, shown.stderr)
    own = run_heatline("view", "--format", "json", "--pid", str(b_truth["pid"]),
                       str(tmp_path / "all.json"), text=True)
    assert own.returncode == 0, own.stderr
    assert json.loads(own.stdout)["elapsed_s"] == b["elapsed_s"]


def test_the_same_pid_on_two_hosts_stays_two_processes(runs, run_heatline, tmp_path):
    _, (a_path, a_truth, _), (b_path, b_truth, _) = runs
    a, b = _load(a_path), _load(b_path)
    # Real runs on one host have different pids: kept apart, keyed by pid.
    merged = _merge(run_heatline, tmp_path / "real.json", a_path, b_path)
    assert [p["pid"] for p in merged["processes"]] == [
        a_truth["pid"], a_truth["children"][0], b_truth["pid"]]
    assert sorted(merged["process_profiles"]) == sorted(
        str(pid) for pid in (a_truth["pid"], a_truth["children"][0], b_truth["pid"]))
    # B as another host's process of A's pid.
    b_twin = _write(tmp_path / "b_twin.json", dict(b, host="node-b", pid=a_truth["pid"]))
    out = tmp_path / "twins.json"
    merged = _merge(run_heatline, out, a_path, b_twin)
    pids = [(p["host"], p["pid"]) for p in merged["processes"]]
    assert pids.count((a["host"], a_truth["pid"])) == 1
    assert pids.count(("node-b", a_truth["pid"])) == 1
    keys = process_keys(merged["processes"])
    assert f"{a['host']}:{a_truth['pid']}" in keys and f"node-b:{a_truth['pid']}" in keys
    assert set(keys) == set(merged["process_profiles"])
    for spec, wanted in ((f"node-b:{a_truth['pid']}", b), (f"{a['host']}:{a_truth['pid']}", a)):
        own = run_heatline("view", "--format", "json", "--pid", spec, str(out), text=True)
        assert own.returncode == 0, own.stderr
        assert json.loads(own.stdout)["elapsed_s"] == wanted["elapsed_s"]
    both = run_heatline("view", "--pid", str(a_truth["pid"]), str(out), text=True)
    assert both.returncode == 1
    assert both.stderr.count("\n") == 1 and "2 processes have pid" in both.stderr
    # B as a later process of A's host with A's pid (a pid used again): two processes too.
    b_again = _write(tmp_path / "b_again.json", dict(b, pid=a_truth["pid"]))
    merged = _merge(run_heatline, tmp_path / "again.json", a_path, b_again)
    keys = process_keys(merged["processes"])
    assert f"{a['host']}:{a_truth['pid']}" in keys and f"{a['host']}:{a_truth['pid']}#2" in keys
    assert len(merged["process_profiles"]) == 3


def test_a_merged_input_is_flattened(runs, run_heatline, tmp_path):
    _, (a_path, a_truth, _), (b_path, b_truth, _) = runs
    a, b = _load(a_path), _load(b_path)
    first = _merge(run_heatline, tmp_path / "ab.json", a_path,
                   _write(tmp_path / "b_other.json", dict(b, host="node-b")))
    # A's child keeps its role and its host (A's) through both merges.
    assert first["processes"][1]["role"] == a["processes"][1]["role"]
    assert first["processes"][1]["host"] == a["host"]
    c = _write(tmp_path / "c.json", dict(b, host="node-c"))
    merged = _merge(run_heatline, tmp_path / "abc.json", tmp_path / "ab.json", c)
    assert [(p["host"], p["pid"], p["role"]) for p in merged["processes"]] == [
        *[(p["host"], p["pid"], p["role"]) for p in first["processes"][:2]],
        *sorted([("node-b", b_truth["pid"], "main"), ("node-c", b_truth["pid"], "main")])]
    for row, before in zip(merged["processes"], first["processes"]):
        assert row["start_s"] == pytest.approx(before["start_s"], abs=2e-6)
    expected = _line_times(first)
    for key, seconds in _line_times(b).items():
        expected[key] = expected.get(key, 0.0) + seconds
    got = _line_times(merged)
    for key, seconds in expected.items():
        assert got[key] == pytest.approx(seconds, abs=1e-4), key
    # A run given again inside a merged input is the same run.
    again = run_heatline("merge", str(tmp_path / "abc.json"), a_path, "-o",
                         str(tmp_path / "x.json"), text=True)
    assert again.returncode == 1 and again.stderr.count("\n") == 1
    assert "hold the same run" in again.stderr and f"process {a_truth['pid']}" in again.stderr


def _one_line_error(result, *phrases):
    assert result.returncode != 0
    assert result.stderr.startswith("heatline: error: "), result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    assert "Traceback" not in result.stderr
    for phrase in phrases:
        assert phrase in result.stderr, (phrase, result.stderr)


def test_bad_input_gives_one_line(runs, run_heatline, tmp_path):
    _, (a_path, _, _), (b_path, _, _) = runs
    out = str(tmp_path / "out.json")

    def merge(*args):
        return run_heatline("merge", *map(str, args), text=True)

    _one_line_error(merge(a_path, tmp_path / "missing.json", "-o", out),
                    "missing.json", "no such file")
    not_profile = _write(tmp_path / "other.json", {"name": "not a profile"})
    _one_line_error(merge(a_path, not_profile, "-o", out), "other.json", "not a heatline profile")
    corrupt = tmp_path / "corrupt.json"
    corrupt.write_text('{"schema_version": 5, "heatline')
    _one_line_error(merge(a_path, corrupt, "-o", out), "corrupt.json", "invalid JSON")
    old = _write(tmp_path / "old.json", dict(_load(b_path), schema_version=4))
    _one_line_error(merge(a_path, old, "-o", out), "version 5", "version 4", "old.json")
    _one_line_error(merge(a_path, a_path, "-o", out), "given twice")
    copy = _write(tmp_path / "copy.json", _load(a_path))
    _one_line_error(merge(a_path, copy, "-o", out), "copy.json", "same run")
    _one_line_error(merge(a_path, "-o", out), "two or more profiles, not 1")
    _one_line_error(merge("-o", out), "required")
    _one_line_error(merge(a_path, b_path), "-o")
    assert not os.path.exists(out)


def test_a_run_on_another_host_records_that_host(runs, run_heatline, tmp_path):
    """A real run whose machine has another host name (a UTS namespace of its own, where
    unshare may make one): heatline records it, and the merge keeps it."""
    import shutil
    import subprocess
    import sys

    _, (a_path, a_truth, _), _ = runs
    name = f"heatline-node-{os.getpid()}"
    unshare = shutil.which("unshare")
    probe = (subprocess.run([unshare, "--uts", "hostname", name], capture_output=True,
                            timeout=60) if unshare else None)
    if probe is None or probe.returncode:
        why = "unshare --uts cannot make a host name here (needs root or user namespaces)"
        if os.environ.get("HEATLINE_REQUIRE_NETNS"):
            pytest.fail(why)
        pytest.skip(why)
    out, truth = tmp_path / "other.json", tmp_path / "other.truth.json"
    done = subprocess.run(
        [unshare, "--uts", "sh", "-c", 'hostname "$0" && exec "$@"', name, sys.executable,
         "-m", "heatline", "-q", "-o", str(out), TARGET, str(truth), "0.1", "1"],
        capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr.decode()
    other, other_truth = _load(out), json.loads(truth.read_text())
    assert other["host"] == name and other["pid"] == other_truth["pid"]
    assert [p["host"] for p in other["processes"]] == [name, name]  # the child inherits it
    merged = _merge(run_heatline, tmp_path / "both.json", a_path, out)
    hosts = {(p["host"], p["pid"]) for p in merged["processes"]}
    assert {(name, other_truth["pid"]), (name, other_truth["children"][0])} <= hosts
    assert (_load(a_path)["host"], a_truth["pid"]) in hosts and len(hosts) == 4
