"""Smoke test of bench/regrtest.py (CPython's own tests, plain and under heatline), so that it
does not rot: its reading of regrtest's output, the multiprocessing drivers it writes for
installs without them, and one small module run both ways end to end. Skipped where this
interpreter's install has no regression tests (some distributions ship them apart)."""

import importlib.util
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH = os.path.join(ROOT, "bench")
sys.path.insert(0, BENCH)
import regrtest  # noqa: E402

pytestmark = [
    # Debian ships regrtest's driver with the standard library, the tests apart
    # (libpython3.X-testsuite): both must be there.
    pytest.mark.skipif(importlib.util.find_spec("test.libregrtest") is None
                       or importlib.util.find_spec("test.test_atexit") is None,
                       reason="this install has no regression tests"),
    # The comparison is for CPython 3.11+: the verdict lines it reads and the
    # multiprocessing drivers it writes (install_tests_in_module_dict(only_type=...)) are 3.11+.
    pytest.mark.skipif(sys.version_info < (3, 11),
                       reason="bench/regrtest.py reads and writes 3.11+'s regrtest"),
]


def test_reads_junit_and_the_verbose_report(tmp_path):
    junit = tmp_path / "junit.xml"
    junit.write_text(
        '<testsuites><testsuite tests="5">'
        '<testcase name="test.m.C.test_ok" status="run" result="completed" />'
        '<testcase name="test.m.C.test_skip"><skipped>no</skipped></testcase>'
        '<testcase name="test.m.C.test_fail"><failure type="AssertionError">x</failure></testcase>'
        '<testcase name="test.m.C.test_xfail"><output>expected</output></testcase>'
        '<testcase />'  # what regrtest leaves for a test whose subTests failed
        '</testsuite></testsuites>')
    outcomes, nameless = regrtest.read_junit(str(junit))
    assert outcomes == {"test.m.C.test_ok": "passed", "test.m.C.test_skip": "skipped",
                        "test.m.C.test_fail": "failed", "test.m.C.test_xfail": "passed"}
    assert nameless == 1
    log = ("FAIL: test_sub (test.m.C.test_sub) (i=2)\n"
           "ERROR: setUpClass (test.m.D)\n"
           "ERROR: test_fail (test.m.C.test_fail)\n"
           "  FAIL: indented lines are the tests' own output\n")
    assert regrtest.failed_from_log(log) == {"test.m.C.test_sub", "test.m.D.setUpClass",
                                             "test.m.C.test_fail"}


def test_written_multiprocessing_drivers_list_the_tests(tmp_path):
    regrtest.write_mp_drivers(str(tmp_path))
    names, needs = regrtest.regrtest_names("test_multiprocessing_spawn", has_drivers=False)
    assert needs and names[0] == "test_multiprocessing_spawn.test_processes"
    listed = subprocess.run(
        [sys.executable, "-m", "test", "--testdir", str(tmp_path), "--list-cases", *names],
        capture_output=True, text=True, timeout=120, cwd=str(tmp_path))
    assert listed.returncode == 0, listed.stderr[-2000:]
    cases = listed.stdout.split()
    for part in regrtest.MP_PARTS:
        assert any(c.startswith(f"test_multiprocessing_spawn.{part}.") for c in cases), part
    assert "test_multiprocessing_spawn.test_processes.WithProcessesTestConnection." \
           "test_large_fd_transfer" in cases


def test_one_module_plain_and_under_heatline(tmp_path):
    out = tmp_path / "r.json"
    version = "%d.%d" % sys.version_info[:2]
    result = subprocess.run(
        [sys.executable, os.path.join(BENCH, "regrtest.py"), "--python",
         f"{version}={sys.executable}", "--modules", "test_atexit", "--timeout", "240",
         "--out", str(out), "--workdir", str(tmp_path / "work")],
        capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-3000:]
    entry = json.loads(out.read_text())["versions"][version]["modules"]["test_atexit"]
    for mode in regrtest.MODES:
        run = entry[mode]
        assert run["junit"] and run["result"] == "SUCCESS" and run["totals"]["run"] > 0, run
        assert run["counts"]["passed"] > 0
    assert entry["heatline"]["profile_written"]
    assert entry["differences"] == []
    assert "No differences." in result.stdout and "| test_atexit |" in result.stdout
