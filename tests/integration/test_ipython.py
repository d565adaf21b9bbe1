"""The IPython magics run as a user runs them: a notebook executed in a real Jupyter kernel
(ipykernel, driven by nbclient), and a script run by terminal IPython. The cells time their own
phases; the report they render must agree with them within what the run's sampling resolves
(its longest gap between samples plus its longest tick per window of time; an allocation of at
least the sampling window is counted exactly, as test_memory_accuracy.py)."""

import html
import json
import os
import re
import subprocess
import sys

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

HELD = 64 * 1024 * 1024

DEFINE = """\
import json, time
import numpy as np

walls = []

def burn(seconds):
    wall, cpu = time.perf_counter(), time.thread_time()
    total = 0
    while time.thread_time() - cpu < seconds:
        total += sum(range(100))
    walls.append(time.perf_counter() - wall)
    return total
"""

PROFILED = """\
%%heatline --sampling-interval 0.01
t0 = time.perf_counter()
held = bytearray(64 * 1024 * 1024)
native = np.ones(8 * 1024 * 1024)
t1 = time.perf_counter()
burn(0.8)
t2 = time.perf_counter()
time.sleep(0.6)
t3 = time.perf_counter()
"""

LINE_MAGIC = """\
cell_lines = {l.source: [l.alloc_python_bytes, l.alloc_native_bytes]
              for l in _heatline_profile.lines()}
cell_time = {"lines": {l.source: l.time_s for l in _heatline_profile.lines()},
             "burn": [f.time_s for f in _heatline_profile.functions() if f.qualname == "burn"],
             "attributed_s": _heatline_profile.data["totals"]["attributed_s"],
             "resolution_s": _heatline_profile.data["max_sample_gap_s"]
                             + _heatline_profile.data["max_tick_s"]}
start = time.perf_counter()
%heatline -q burn(0.5)
line_wall = time.perf_counter() - start
print(json.dumps({"alloc": t1 - t0, "burn": t2 - t1, "sleep": t3 - t2, "line_wall": line_wall,
                  "line_burn_wall": walls[-1], "cell_lines": cell_lines, "cell_time": cell_time,
                  "line_burn_s": [f.time_s for f in _heatline_profile.functions()
                                  if f.qualname == "burn"],
                  "line_resolution_s": _heatline_profile.data["max_sample_gap_s"]
                                       + _heatline_profile.data["max_tick_s"]}))
"""

# A cell that starts a thread of its own (kept), and one that asks for the kernel's threads too.
THREADED = """\
%%heatline -q
import threading
worker = threading.Thread(target=burn, args=(0.3,))
worker.start()
worker.join()
"""

THREADS_SEEN = """\
threaded = [[t["native_id"], t["python_s"] + t["native_s"] + t["system_s"] + t.get("cpu_wait_s", 0)]
             for t in _heatline_profile.data["threads"]]
resolution = _heatline_profile.data["max_sample_gap_s"] + _heatline_profile.data["max_tick_s"]
%heatline -q --kernel-threads time.sleep(0.05)
print(json.dumps({"threaded": threaded, "worker": worker.native_id, "resolution": resolution,
                  "kernel": threading.main_thread().native_id,
                  "all_threads": len(_heatline_profile.data["threads"]),
                  "alive": len(threading.enumerate())}))
"""


@pytest.fixture(scope="module")
def executed():
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in
                      ("%load_ext heatline", DEFINE, PROFILED, LINE_MAGIC,
                       "%heatline --no-such-option x = 1", THREADED, THREADS_SEEN)]
    client = nbclient.NotebookClient(notebook, timeout=600, startup_timeout=600,
                                     allow_errors=True, kernel_name="python3")
    client.execute()  # hang guards only: a loaded machine starts kernels slowly
    return notebook


def _page_data(frame):
    page = html.unescape(re.search(r'srcdoc="([^"]*)"', frame).group(1))
    found = re.search(r'<script id="heatline-data" type="application/json">(.*?)</script>',
                      page, re.S)
    return json.loads(found.group(1))


def test_cell_magic_renders_the_cells_lines_with_true_shares_and_memory(executed):
    [output] = executed.cells[2].outputs
    assert output["output_type"] == "display_data"
    data = _page_data(output["data"]["text/html"])
    truth = json.loads(executed.cells[3].outputs[0]["text"])

    # The profiled cell's own lines, under the name IPython's tracebacks give the cell (its
    # execution count), not its file (/tmp/ipykernel_PID/HASH.py); the report is named after it.
    [cell] = [f for f in data["files"] if any(row[1] == "time.sleep(0.6)" for row in f["lines"])]
    assert cell["path"] == "Cell In[3]"
    assert data["program"] == "Cell In[3]"
    rows = {row[1]: row for row in cell["lines"]}
    assert set(PROFILED.splitlines()[1:]) <= set(rows)
    # Each of the cell's lines and burn() is one window of time, charged its length give or
    # take one resolution (the profile's longest gap plus longest tick: a loaded machine
    # stretches them), so that is what the seconds are held to; the page's shares are those
    # seconds over all the time it charged. (Shares of the truth's three phases alone were off
    # by up to (gap + tick) / total, 3 points at 0.05 s of 1.7 s on a loaded machine.)
    timed = truth["cell_time"]
    resolution, attributed = timed["resolution_s"], timed["attributed_s"]
    sleep_row = rows["time.sleep(0.6)"]
    sleep_s = timed["lines"]["time.sleep(0.6)"]
    assert sleep_s == pytest.approx(truth["sleep"], abs=resolution), (sleep_s, truth, resolution)
    # A line's row: python, native, system %, ..., and waiting for a CPU % last (index 13).
    assert sum(sleep_row[2:5]) + sleep_row[13] == pytest.approx(100 * sleep_s / attributed,
                                                                abs=0.01), sleep_row
    # 64 MiB (and the bytearray's header): counted exactly, above the sampling window.
    assert HELD <= rows["held = bytearray(64 * 1024 * 1024)"][5] <= HELD + 4096
    assert data["summary"]["peak_bytes"] >= 2 * HELD
    # Python and native memory apart (the profile kept for code, _heatline_profile): numpy's
    # 64 MiB buffer is native (malloc, seen without LD_PRELOAD), the bytearray Python's.
    lines = truth["cell_lines"]
    assert HELD <= lines["held = bytearray(64 * 1024 * 1024)"][0] <= HELD + 4096
    assert HELD <= lines["native = np.ones(8 * 1024 * 1024)"][1] <= HELD + 4096

    # burn(), defined in the earlier cell, is reported under that cell with its source.
    [burn] = [f for f in data["functions"] if f[0] == "burn"]
    assert burn[1] == "Cell In[2]"
    [defining] = [f for f in data["files"] if f["path"] == burn[1]]
    assert any(row[1] == "def burn(seconds):" for row in defining["lines"])
    [burn_s] = timed["burn"]
    assert burn_s == pytest.approx(truth["burn"], abs=resolution), (burn_s, truth, resolution)
    waited = burn[9] if len(burn) > 9 else 0  # its cpu_wait %, when the run had waits
    assert sum(burn[3:6]) + waited == pytest.approx(100 * burn_s / attributed, abs=0.01), burn

    # Only the cell's thread: the kernel's own (heartbeat, I/O, history...), running before the
    # cell and no line of it, are left out of the threads table and the flame graph, whose
    # root is then the cell's own time: at most its wall time (they made a 0.148 s cell
    # "all 1.121 s"), plus a resolution for the sampling.
    kernel = json.loads(executed.cells[6].outputs[0]["text"])["kernel"]
    assert [row[0] for row in data["threads"]] == [f"main thread {kernel}"]
    wall = truth["alloc"] + truth["burn"] + truth["sleep"]
    assert data["flame"][1] <= wall + 2 * resolution, (data["flame"][1], wall, resolution)
    assert data["flame"][1] >= attributed - resolution

    # The plain-text alternative is the terminal report of the same profile.
    text = output["data"]["text/plain"]
    assert "profile of Cell In[3]" in text and "ipykernel_" not in text
    assert "time.sleep(0.6)" in text and "def burn(seconds):" in text
    # The line table's row (the summary above it quotes the line too).
    held_line = next(line for line in text.splitlines()
                     if "held = bytearray" in line and line.split()[0].isdigit())
    assert f"{HELD / 2**20:.1f}" in held_line  # the report's MiB, as check and the marker


def test_line_magic_profiles_the_statement_and_keeps_the_profile(executed):
    cell = executed.cells[3]
    assert [o["output_type"] for o in cell.outputs] == ["stream"]  # -q: no report
    truth = json.loads(cell.outputs[0]["text"])
    [burn_s] = truth["line_burn_s"]
    # The statement's busy time (its wall time: a thread waiting for a CPU is busy), one window
    # charged within one resolution (the profile's longest gap plus longest tick), and never
    # more than the wall time around the magic.
    want, resolution = truth["line_burn_wall"], truth["line_resolution_s"]
    assert abs(burn_s - want) <= resolution, (burn_s, want, resolution)
    assert burn_s <= truth["line_wall"]


def test_threads_the_cell_started_are_kept_and_the_kernels_only_on_request(executed):
    seen = json.loads(executed.cells[6].outputs[0]["text"])
    ids = [native_id for native_id, _ in seen["threaded"]]
    # The cell's thread and the one it started, which burnt 0.3 s of CPU (its time is its):
    # at least that much wall time, less what a thread's two ends can miss, up to one of the
    # run's longest gaps each (a sampler held up for most of the cell on a busy machine can
    # charge each thread a few ms).
    assert sorted(ids) == sorted([seen["kernel"], seen["worker"]]), seen
    assert dict(seen["threaded"])[seen["worker"]] >= 0.3 - 2 * seen["resolution"], seen
    # --kernel-threads: every thread the engine saw, the kernel's own included.
    assert seen["all_threads"] >= seen["alive"] > 2, seen


def test_a_bad_option_is_a_one_line_usage_error(executed):
    [output] = executed.cells[4].outputs  # ipykernel shows a UsageError as one stderr line
    assert output["output_type"] == "stream" and output["name"] == "stderr"
    assert output["text"] == ("UsageError: heatline: error: unrecognized arguments: "
                              "--no-such-option\n")


def test_terminal_ipython_prints_the_text_report(tmp_path):
    script = tmp_path / "session.ipy"
    script.write_text("%load_ext heatline\n" + DEFINE + "%heatline burn(0.3)\n")
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "COLUMNS")}
    done = subprocess.run([sys.executable, "-m", "IPython", "--no-banner", "--colors=NoColor",
                           "--HistoryManager.enabled=False", str(script)], capture_output=True,
                          text=True, env=env, cwd=tmp_path, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    assert "heatline profile of" in done.stdout
    # burn's lines come from the cell IPython compiled them in (its source from linecache),
    # named as IPython's tracebacks name it, not <ipython-input-1-HASH>.
    assert "Cell In[1]:" in done.stdout and "<ipython-input-" not in done.stdout
    assert "def burn(seconds):" in done.stdout
