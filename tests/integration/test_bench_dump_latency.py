"""Smoke test of bench/dump_latency.py, so that it does not rot: two rounds on its busy target,
the raw numbers' shape, the Markdown table it prints, and its --render into a copy of
docs/design-live.md's block. Needs no py-spy: without one its row is left out (a fake py-spy,
a script that exits at once, stands in to check the ratio column)."""

import json
import os
import shutil
import subprocess
import sys

import pytest

# Nothing checked here depends on the CPython version (Makefile, suite-3.X).
pytestmark = [pytest.mark.interpreter_independent,
              pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")]

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH = os.path.join(ROOT, "bench", "dump_latency.py")


def test_the_bench_measures_and_renders(tmp_path):
    fake = tmp_path / "py-spy"
    fake.write_text("#!/bin/sh\ntest \"$1\" = --version && echo py-spy 0.0.0\nexit 0\n")
    fake.chmod(0o755)
    out = tmp_path / "latency.json"
    done = subprocess.run([sys.executable, BENCH, "--rounds", "2", "--py-spy", str(fake),
                           "--out", str(out)], capture_output=True, text=True, timeout=300,
                          cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(out.read_text())
    assert results["rounds"] == 2 and results["py_spy"] == "py-spy 0.0.0"
    labels = set(results["runs"])
    assert {"py-spy dump --pid PID", "python -m heatline dump PID", "python -c pass"} <= labels
    for label, runs in results["runs"].items():
        assert len(runs["wall_s"]) == len(runs["cpu_s"]) == 2, label
        assert all(wall > 0 for wall in runs["wall_s"]), label
    assert len(results["pause_ms"]) == len(results["read_ms"]) == 2
    assert all(read > 0 for read in results["read_ms"])
    assert "| `python -m heatline dump PID` |" in done.stdout
    assert "| `py-spy dump --pid PID` |" in done.stdout and "1.00x" in done.stdout

    # --render splices the table into docs/design-live.md (here a copy of the tree's docs).
    tree = tmp_path / "tree"
    shutil.copytree(os.path.join(ROOT, "bench"), tree / "bench",
                    ignore=shutil.ignore_patterns("results", "__pycache__"))
    (tree / "docs").mkdir()
    shutil.copy(os.path.join(ROOT, "docs", "design-live.md"), tree / "docs")
    rendered = subprocess.run([sys.executable, str(tree / "bench" / "dump_latency.py"),
                               "--render", str(out)], capture_output=True, text=True,
                              timeout=60)
    assert rendered.returncode == 0, rendered.stderr
    text = (tree / "docs" / "design-live.md").read_text()
    block = text.split("<!-- dump-latency:begin -->", 1)[1].split("<!-- dump-latency:end -->")[0]
    assert "| `python -m heatline dump PID` |" in block
