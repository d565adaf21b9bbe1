"""Threads by their names: the profile's threads carry the name threading gave each (or the
kernel's, for a thread threading does not know), read while the thread lived, and every view
shows it, as text (escaped in HTML, never read as markup in the terminal).

The target (tests/targets/thread_names.py) records each thread's kernel id and how long its
work took, so a name is checked on the right thread: the thread named "writer" is charged about
its 0.6 s of work, "loader" its 0.3 s. A thread is charged the time between samples while its
work runs: its total differs from its work's wall time by at most a sampling gap at each end
(the longest, max_sample_gap_s), and the time threading's own frames take around it."""

import json

import pytest

from heatline.data import model
from heatline.data.queries import thread_name
from heatline.renderers import html

# Nothing checked here depends on the CPython version beyond what threading gives on every one.
pytestmark = pytest.mark.interpreter_independent

HOSTILE = "<script>alert('pwned')</script>[bold]h[/bold]"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """(truth, profile path, profile) of one run of the target."""
    import subprocess
    import sys

    from conftest import PROGRAMS

    directory = tmp_path_factory.mktemp("thread_names")
    truth_path, profile_path = directory / "truth.json", directory / "profile.json"
    args = ["-q", "-o", str(profile_path), "--format", "json",
            f"{PROGRAMS}/thread_names.py", str(truth_path)]
    result = subprocess.run([sys.executable, "-m", "heatline", *args], capture_output=True,
                            text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    profile = json.loads(profile_path.read_text())
    assert not model.mismatches(profile)  # the names are in the model (data/model.py)
    return json.loads(truth_path.read_text()), profile_path, profile


def _by_id(profile):
    return {t["native_id"]: (i, t) for i, t in enumerate(profile["threads"])}


def test_the_profile_names_each_thread(run):
    truth, _, profile = run
    threads = _by_id(profile)
    ids = truth["native_ids"]
    names = {key: threads[ids[key]][1].get("name") for key in ids}
    assert names == {"brief": "brief", "loader": "loader", "writer": "writer",
                     "hostile": HOSTILE, "raw": truth["raw_comm"]}
    assert threads[truth["main_native_id"]][1]["name"] == "MainThread"
    # each name is on the thread that did that work
    gap = profile["max_sample_gap_s"]
    for key in ("loader", "writer"):
        thread = threads[ids[key]][1]
        charged = (thread["python_s"] + thread["native_s"] + thread["system_s"]
                   + thread.get("cpu_wait_s", 0.0))
        assert abs(charged - truth["spans"][key]) <= 2 * gap + profile["sampling_interval_s"], (
            key, charged, truth)


def test_the_views_show_the_names(run, run_heatline, tmp_path):
    truth, path, profile = run
    ids = truth["native_ids"]
    threads = _by_id(profile)
    label = {key: thread_name(profile, threads[ids[key]][0]) for key in ids}
    assert label["loader"] == f"loader (thread {ids['loader']})"
    assert label["hostile"] == f"{HOSTILE} (thread {ids['hostile']})"
    assert thread_name(profile, threads[truth["main_native_id"]][0]) == (
        f"main thread {truth['main_native_id']}")
    # the terminal's thread table (wide enough that no name is cut): the markup as text
    result = run_heatline("view", str(path), text=True, env={"COLUMNS": "200"})
    assert result.returncode == 0, result.stderr
    for key in ("loader", "writer", "raw", "hostile"):
        assert label[key] in result.stdout, (key, result.stdout)
    # the HTML page: its thread list and the flame graph's thread roots
    data = html.page_data(profile)
    listed = [row[0] for row in data["threads"]]
    roots = [node[0] for node in data["flame"][2]]
    for key in ("loader", "writer", "hostile"):
        assert label[key] in listed and label[key] in roots, key
    # ... escaped in the page: no name can end the data's <script> element
    out = tmp_path / "report.html"
    assert run_heatline("view", str(path), "--html", "-o", str(out)).returncode == 0
    page = out.read_text(encoding="utf-8")
    assert "<script>alert('pwned')" not in page
    assert "\\u003cscript\\u003ealert('pwned')\\u003c/script\\u003e[bold]h[/bold]" in page
    # the Chrome trace's thread names
    out = tmp_path / "p.trace.json"
    assert run_heatline("view", str(path), "--format", "chrome", "-o", str(out)).returncode == 0
    events = json.loads(out.read_text())
    events = events["traceEvents"] if isinstance(events, dict) else events
    named = {e["tid"]: e["args"]["name"] for e in events if e.get("name") == "thread_name"}
    for key in ("loader", "writer", "hostile", "brief", "raw"):
        assert named.get(ids[key]) == label[key], (key, named)


def test_the_api_names_threads(run_python, tmp_path):
    """heatline.profile() in the program records the names too: of a thread started and ended
    inside the block (its object kept), and of one running since before it."""
    script = tmp_path / "api_names.py"
    script.write_text(
        "import json, sys, threading, time\n"
        "import heatline\n"
        "stop = threading.Event()\n"
        "def spin(seconds):\n"
        "    deadline = time.perf_counter() + seconds\n"
        "    while time.perf_counter() < deadline:\n"
        "        pass\n"
        "idle = threading.Thread(target=stop.wait, name='idler')\n"
        "idle.start()\n"
        "with heatline.profile() as p:\n"
        "    t = threading.Thread(target=spin, args=(0.1,), name='worker')\n"
        "    t.start()\n"
        "    t.join()\n"
        "stop.set()\n"
        "print(json.dumps({t['native_id']: t.get('name') for t in p.data['threads']}))\n")
    result = run_python(str(script), text=True)
    assert result.returncode == 0, result.stderr
    names = set(json.loads(result.stdout).values())
    assert {"MainThread", "worker", "idler"} <= names, names


def test_the_programs_profile_function_sees_no_name_read(run_heatline, run_python, tmp_path):
    """The reads of new threads' names run in the main thread (a pending call): the program's
    own sys.setprofile function sees none of heatline's calls there, as without heatline."""
    script = tmp_path / "profiled.py"
    script.write_text(
        "import sys, threading, time\n"
        "files = set()\n"
        "def hook(frame, event, arg):\n"
        "    files.add(frame.f_code.co_filename)\n"
        "def spin(seconds):\n"
        "    deadline = time.perf_counter() + seconds\n"
        "    while time.perf_counter() < deadline:\n"
        "        pass\n"
        "sys.setprofile(hook)\n"
        "for n in range(5):\n"
        "    t = threading.Thread(target=spin, args=(0.05,), name=f'w{n}')\n"
        "    t.start()\n"
        "    spin(0.1)  # the main thread runs Python meanwhile: the read runs here\n"
        "    t.join()\n"
        "sys.setprofile(None)\n"
        "print(sorted(f for f in files if 'heatline' in f))\n")
    out = tmp_path / "p.json"
    result = run_heatline("-q", "-o", str(out), str(script), text=True)
    assert (result.returncode, result.stdout) == (0, "[]\n"), result.stderr
    # the reads did run there: each thread, its object dropped at once, has its name
    names = {t.get("name") for t in json.loads(out.read_text())["threads"]}
    assert {"w0", "w1", "w2", "w3", "w4"} <= names, names


def test_names_of_kept_threads_are_read_at_the_end(run_heatline, tmp_path):
    """A thread that started and ended while the main thread waited in join() (no read could
    run in the program meanwhile) has its name when the program keeps its object: the end of
    the run reads the program's threading module, though heatline's own modules are in
    sys.modules then."""
    script = tmp_path / "kept.py"
    script.write_text("import threading, time\n"
                      "threads = [threading.Thread(target=time.sleep, args=(0.05,),"
                      " name='kept')]\n"
                      "threads[0].start()\n"
                      "threads[0].join()\n"
                      "print(threads[0].native_id)\n")
    out = tmp_path / "p.json"
    result = run_heatline("-q", "-o", str(out), str(script), text=True)
    assert result.returncode == 0, result.stderr
    threads = {t["native_id"]: t for t in json.loads(out.read_text())["threads"]}
    assert threads[int(result.stdout)].get("name") == "kept"
