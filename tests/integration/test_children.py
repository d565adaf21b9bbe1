"""Child processes: profiled with the parent's options and merged into one profile,
without the program or its children noticing (tests/targets/children_*.py)."""

import json
import math
import os
import re
import signal
import sys

import pytest
from _tools import require_module

TARGETS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "targets")
SANITIZED = bool(os.environ.get("HEATLINE_SANITIZED"))
timing = pytest.mark.skipif(SANITIZED, reason="timing is not meaningful under ASan")
HANG_GUARD_S = 240


def _target(name):
    return os.path.join(TARGETS, name)


def _profile(run_heatline, tmp_path, *args, options=()):
    path = tmp_path / "profile.json"
    run = run_heatline(
        "-q", "-o", str(path), *options, *args, text=True, timeout=HANG_GUARD_S,
        env={"TMPDIR": str(_private_tmp(tmp_path))},
    )
    assert run.returncode == 0, run.stderr
    with open(path) as f:
        return json.load(f), run


def _private_tmp(tmp_path):
    directory = tmp_path / "tmp"
    directory.mkdir(exist_ok=True)
    return directory


def _left_in(tmp):
    """What a run left in its temporary directory: the run directory must be gone; the
    directory of `heatline ctl` (heatline-UID, shared by the user's runs) must be empty."""
    control = tmp / f"heatline-{os.getuid()}"
    left = [name for name in os.listdir(tmp) if name != control.name]
    return left + (os.listdir(control) if control.is_dir() else [])


def _function(profile, name, path=None):
    """The merged entry of function `name` (summed over the files that define it)."""
    found = [
        function
        for file_path, entry in profile["files"].items()
        if path is None or file_path == path
        for function in entry["functions"]
        if function["qualname"] == name
    ]
    assert found, f"no function {name} in the profile"
    assert len(found) == 1
    return found[0]


def _line(profile, path, text):
    lines = [line for line in profile["files"][path]["lines"] if text in line["source"]]
    assert len(lines) == 1, text
    return lines[0]


def _assert_waiting_line_is_blocked(profile, path, parent, visits=1):
    """The line where the parent waits for its children is blocked (system) time, all but its
    busy moments, as far as this run's sampling can resolve: `parent` is the truth's Span of
    the parent's main thread over that line (_truth.py: wall and busy time, and how many times
    it blocked); `visits`, how many times the program enters the line (a loop's header: once
    per iteration and once more to leave).

    Why the bound. A tick charges the time since the previous tick (at most the longest gap g)
    to what the thread is doing when the tick reads it, up to one tick's duration t after the
    tick's time. Two kinds of error follow.
    - One-sided, at most g + t each, twice per visit: the first tick after the program enters
      the line charges time of the line before; and a tick that ends a gap in which the
      sampler was held up finds the thread running if it woke meanwhile, and charges it the
      whole gap. (The 3.13 forkserver failure, 0.28 s native of a 1.38 s wait: in 36 runs
      instrumented at load 6-9, every busy sample of the Pool's waiting line was the wake-up,
      runnable, its CPU clock unmoved since the tick before.)
    - Random: the other ticks land on the thread's short busy moments between its blocks (GIL
      hand-overs; the DataLoader's parent blocks 120-180 times) independently of them, so what
      they charge is an unbiased estimate of its busy time B, each tick adding at most g: a
      variance of at most g * B; four standard deviations are allowed.
    Time an allocation hook waited for heatline's own lock is charged as running; the truth
    counts it as blocked, and the run measures it. A wait charged as running would be most of
    parent["wall_s"]; g + t is 0.02-0.14 s at load 8 on 2 cores and can exceed 1 s (a run like
    that cannot tell)."""
    waiting = _line(profile, path, "the parent waits here")
    main_process = profile["process_profiles"][str(profile["processes"][0]["pid"])]
    main_thread = next(thread for thread in main_process["threads"] if thread["main"])
    gap, tick = main_process["max_sample_gap_s"], main_process["max_tick_s"]
    busy = parent["busy_s"]
    allowed = (busy + 4 * math.sqrt(gap * busy) + 2 * visits * (gap + tick)
               + main_thread.get("engine_wait_s", 0.0))
    running = waiting["python_s"] + waiting["native_s"] + waiting.get("cpu_wait_s", 0.0)
    assert running <= allowed, {"line": waiting, "parent": parent, "allowed_s": allowed,
                                "max_sample_gap_s": gap, "max_tick_s": tick,
                                "engine_wait_s": main_thread.get("engine_wait_s")}


def _busy(entry):
    """The Python time and waits for a CPU charged to a function: what the truth's busy_s
    measures (on a CPU plus runnable, tests/targets/_truth.py) of a pure-Python loop."""
    return entry["python_s"] + entry.get("cpu_wait_s", 0.0)


def _worker_tolerance_s(profile, stretches):
    """How far the time charged to the workers' loop may be from what they measured: each of
    the `stretches` calls of the loop is one stretch of running, charged within its worker's
    resolution (longest gap + longest tick, as above); waits for heatline's lock are running
    by heatline and blocked by the truth."""
    workers = [profile["process_profiles"][str(p["pid"])] for p in profile["processes"][1:]]
    resolution = max(w["max_sample_gap_s"] + w["max_tick_s"] for w in workers)
    waited = sum(t.get("engine_wait_s", 0.0) for w in workers for t in w["threads"])
    return stretches * resolution + waited


@timing
@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
def test_pool_workers_time_and_memory_are_merged(run_heatline, tmp_path, method):
    path = _target("children_pool.py")
    profile, run = _profile(run_heatline, tmp_path, path, method)
    truth = json.loads(run.stdout)
    work = _function(profile, "loop", path)
    # The workers' loop is Python time, as much as the workers measured themselves, within what
    # the workers' sampling resolves: one stretch of running per task (4).
    # The message keeps what is needed to tell a worker's share missing from a wrong share.
    tolerance = _worker_tolerance_s(profile, stretches=4)
    assert _busy(work) == pytest.approx(truth["busy_s"], abs=tolerance), (
        tolerance, profile["processes"], profile["warnings"])
    # Nothing in it blocks or calls out for long: any other kind is a sample at a task's edge.
    assert work["native_s"] + work["system_s"] <= tolerance
    # Their allocations are counted in their lines: 2 x 64 MiB, within 10%.
    allocate = _function(profile, "allocate", path)
    allocated = allocate["alloc_python_bytes"] + allocate["alloc_native_bytes"]
    assert allocated == pytest.approx(truth["allocated"], rel=0.10)
    # The parent's waiting line is system time.
    _assert_waiting_line_is_blocked(profile, path, truth["parent"])
    # One row per process: the main one and the two workers.
    roles = sorted(p["role"] for p in profile["processes"])
    assert roles == ["Pool worker", "Pool worker", "main"]
    main = profile["processes"][0]
    assert main["pid"] == truth["pid"] and main["role"] == "main"
    # Fork and spawn workers are the program's children; forkserver ones the fork server's
    # (which only forks them and is not listed).
    parents = {p["ppid"] for p in profile["processes"][1:]}
    assert (parents == {truth["pid"]}) == (method != "forkserver")
    assert not [w for w in profile["warnings"] if "left no profile" in w]
    # Each process's own profile is kept for `view --pid`; the workers' sum is the merged one.
    workers = [profile["process_profiles"][str(p["pid"])] for p in profile["processes"][1:]]
    assert sum(_function(w, "loop", path)["python_s"] for w in workers) == (
        pytest.approx(work["python_s"], abs=1e-5)
    )
    # The run directory is gone.
    assert _left_in(_private_tmp(tmp_path)) == []


@timing
def test_python_subprocess_is_profiled(run_heatline, tmp_path):
    path = _target("children_subprocess.py")
    profile, run = _profile(run_heatline, tmp_path, path)
    truth = json.loads(run.stdout)
    work = _function(profile, "loop", path)
    # One stretch of running, in the child.
    assert _busy(work) == pytest.approx(truth["busy_s"],
                                        abs=_worker_tolerance_s(profile, stretches=1))
    _assert_waiting_line_is_blocked(profile, path, truth["parent"])
    child = [p for p in profile["processes"] if p["role"] == "python subprocess"]
    assert len(child) == 1 and child[0]["argv"] == [path, "child"]


@timing
@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_dataloader_workers_time_is_merged(run_heatline, tmp_path, method):
    require_module("torch", "torch")
    path = _target("children_dataloader.py")
    profile, run = _profile(run_heatline, tmp_path, path, method, "truth")
    truth = json.loads(run.stdout.splitlines()[-1])
    # The Dataset's transform, run by the workers, is Python time: what they measured
    # themselves, within what their sampling resolves (one stretch of running per item).
    work = _function(profile, "transform", path)
    tolerance = _worker_tolerance_s(profile, stretches=16)
    assert _busy(work) == pytest.approx(truth["busy_s"], abs=tolerance), (
        tolerance, profile["processes"], profile["warnings"])
    assert work["native_s"] + work["system_s"] <= tolerance
    # The parent's `for batch in loader` line waits for the workers: system time.
    _assert_waiting_line_is_blocked(profile, path, truth["parent"],
                                    visits=truth["parent"]["visits"])
    # One row per process: the main one and the two workers, the program's children.
    main, *workers = profile["processes"]
    assert (main["pid"], main["role"]) == (truth["pid"], "main")
    assert [(w["role"], w["ppid"]) for w in workers] == [("DataLoader worker", truth["pid"])] * 2
    assert not [w for w in profile["warnings"] if "left no profile" in w]
    assert _left_in(_private_tmp(tmp_path)) == []


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_dataloader_workers_see_what_they_see_under_python(run_heatline, run_python, tmp_path,
                                                          method):
    """The items (values, which worker made each, whether it saw the parent's environment and
    sys.argv) and the workers' exit codes: the same bytes as under python."""
    require_module("torch", "torch")
    stdout = _same_as_under_python(run_heatline, run_python, tmp_path,
                                   _target("children_dataloader.py"), method)
    items, exits = stdout.splitlines()
    assert {worker for _, _, worker, _ in json.loads(items)} == {0, 1}
    assert all(same for *_, same in json.loads(items)) and exits == "[0, 0]"


def test_no_children_restores_single_process_profiles(run_heatline, tmp_path):
    path = _target("children_pool.py")
    profile, run = _profile(run_heatline, tmp_path, path, "fork", "2",
                            options=("--no-children",))
    assert "processes" not in profile
    assert "loop" not in {
        f["qualname"] for e in profile["files"].values() for f in e["functions"]
    }
    assert json.loads(run.stdout)["busy_s"] > 0


@pytest.mark.parametrize("options, child_hooked", [((), True), (("--no-children",), False)])
def test_a_fork_child_keeps_the_memory_hooks_only_when_profiled(run_heatline, tmp_path,
                                                                options, child_hooked):
    """With --no-children a fork child runs as under python: the allocator hooks it inherited
    are taken out (idle, they still cost every allocation a call: `make bench-pool`)."""
    _, run = _profile(run_heatline, tmp_path, _target("children_hooks.py"), options=options)
    assert json.loads(run.stdout) == {"parent": True, "fork child": child_hooked}


@pytest.mark.parametrize(
    "case", ["subprocess", "spawn", "fork", "forkserver", "exits", "thread"]
)
def test_children_see_what_they_see_under_python(run_heatline, run_python, tmp_path, case):
    """Environment, sys.argv, sys.path, SIGTERM disposition, exit statuses and output: the
    same bytes as under python (the target compares child and parent for mp children)."""
    _same_as_under_python(run_heatline, run_python, tmp_path, _target("children_behaviour.py"),
                          case)


def _same_as_under_python(run_heatline, run_python, tmp_path, *args):
    """Run ``args`` under python and under heatline: the same exit status (0), stdout and
    stderr, and nothing left behind. Returns python's stdout."""
    plain = run_python(*args, text=True, timeout=HANG_GUARD_S,
                       env={"TMPDIR": str(_private_tmp(tmp_path))})
    profiled = run_heatline("-q", *args, text=True, timeout=HANG_GUARD_S,
                            env={"TMPDIR": str(_private_tmp(tmp_path))})
    assert plain.returncode == 0, plain.stderr
    assert (profiled.returncode, profiled.stdout) == (0, plain.stdout)
    assert _stderr(profiled.stderr) == _stderr(plain.stderr)
    assert _left_in(_private_tmp(tmp_path)) == []
    return plain.stdout


def _stderr(text):
    """stderr without pids (python's fork-from-a-thread warning names one)."""
    return [re.sub(r"pid=\d+", "pid=N", line) for line in text.splitlines()]


def test_exits_crashes_and_sigkill(run_heatline, tmp_path):
    path = _target("children_behaviour.py")
    profile, run = _profile(run_heatline, tmp_path, path, "exits")
    assert run.stdout == "[7, 3, 5, -9]\n"
    exits = sorted(p["exit"] for p in profile["processes"][1:])
    # The crashing child exits through multiprocessing (os._exit(7) after the traceback), the
    # others through os._exit; the SIGKILLed one leaves nothing, and the report says so.
    assert exits == ["os._exit(3)", "os._exit(5)", "os._exit(7)"]
    assert "1 child process left no profile" in " ".join(profile["warnings"])
    spin = _function(profile, "spin_then_exit", path)
    assert spin["python_s"] > 0


def test_a_child_that_cannot_write_its_profile_says_why(run_heatline, tmp_path):
    """A profiler failure in a child never changes the child, and the report names it rather
    than only counting a missing profile: here the child's snapshot raises."""
    script = tmp_path / "failing_child.py"
    script.write_text(
        "import os\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    import heatline._native as engine\n"
        "    def broken():\n"
        "        raise RuntimeError('snapshot broken on purpose')\n"
        "    engine.snapshot = broken\n"
        "    os._exit(6)\n"
        "print(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))\n"
    )
    profile, run = _profile(run_heatline, tmp_path, str(script))
    assert run.stdout == "6\n"  # the child's own exit status, as under python
    warnings = " ".join(profile["warnings"])
    assert "1 child process left no profile" in warnings
    assert "could not write its profile: RuntimeError: snapshot broken on purpose" in warnings
    assert _left_in(_private_tmp(tmp_path)) == []


def test_fork_from_a_thread_is_profiled(run_heatline, tmp_path):
    path = _target("children_behaviour.py")
    profile, run = _profile(run_heatline, tmp_path, path, "thread")
    assert run.stdout == "4\n"
    [child] = profile["processes"][1:]
    assert (child["role"], child["exit"]) == ("fork child", "os._exit(4)")
    assert _function(profile, "spin_then_exit", path)["python_s"] > 0


def test_a_child_outliving_the_program_does_not_hold_it(run_heatline, tmp_path):
    path = _target("children_behaviour.py")
    profile, run = _profile(run_heatline, tmp_path, path, "outlive")
    child = int(run.stdout)
    try:
        os.kill(child, 0)  # still running: heatline did not wait for it
        assert "1 child process left no profile" in " ".join(profile["warnings"])
        assert _left_in(_private_tmp(tmp_path)) == []
    finally:
        os.kill(child, signal.SIGKILL)


def test_view_pid_shows_one_process(run_heatline, tmp_path):
    path = _target("children_pool.py")
    profile, _ = _profile(run_heatline, tmp_path, path, "fork", "2")
    worker = profile["processes"][1]["pid"]
    shown = run_heatline("view", "--format", "json", "--pid", str(worker),
                         str(tmp_path / "profile.json"), text=True)
    assert shown.returncode == 0, shown.stderr
    own = json.loads(shown.stdout)
    assert own == profile["process_profiles"][str(worker)]
    # One worker's share of the loop (a worker may have run both tasks), and only its threads.
    assert _function(own, "loop")["python_s"] <= _function(profile, "loop")["python_s"]
    assert "processes" not in own and len(own["threads"]) < len(profile["threads"])
    missing = run_heatline("view", "--pid", "1", str(tmp_path / "profile.json"), text=True)
    assert missing.returncode == 1
    assert missing.stderr.startswith("heatline: error: ") and "has no process 1" in missing.stderr
    report = run_heatline("view", str(tmp_path / "profile.json"), text=True,
                          env={"COLUMNS": "120"})
    assert "Processes" in report.stdout and "Pool worker" in report.stdout


if sys.platform != "linux":  # pragma: no cover
    pytestmark = pytest.mark.skip("Linux only")


def test_html_report_lists_the_processes(run_heatline, tmp_path):
    from _tools import chromium_dom

    profile, _ = _profile(run_heatline, tmp_path, _target("children_pool.py"), "fork", "2")
    page = tmp_path / "report.html"
    shown = run_heatline("view", "--format", "html", "-o", str(page),
                         str(tmp_path / "profile.json"), text=True)
    assert shown.returncode == 0, shown.stderr
    dom = chromium_dom(page.as_uri())
    assert 'data-rendered="1"' in dom and 'id="error"' not in dom
    table = re.search(r'<table id="processes">(.*?)</table>', dom, flags=re.S).group(1)
    rows = re.findall(r"<tr>(.*?)</tr>", table, flags=re.S)[1:]  # after the header
    cells = [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in rows]
    assert [(int(c[0]), c[2]) for c in cells] == [
        (p["pid"], p["role"]) for p in profile["processes"]
    ]
    assert cells[0][2] == "main" and any(c[2] == "Pool worker" for c in cells[1:])


ONE_FILE_PARENT = """\
import glob, json, marshal, os, subprocess, sys
subprocess.run([sys.executable, "-c", "import sys; sys.exit(3)"])
run_dir, = glob.glob(os.path.join(os.environ["TMPDIR"], "heatline-" + "[0-9a-f]" * 12))
names = sorted(n for n in os.listdir(run_dir) if os.path.isfile(os.path.join(run_dir, n)))
with open(os.path.join(run_dir, names[0]), "rb") as f:
    payload = marshal.load(f)
    print(json.dumps({"names": names, "exit": payload["exit"], "after": f.read().decode()}))
"""


def test_a_child_leaves_one_file_its_profile_with_its_exit_status_after_it(run_heatline,
                                                                          tmp_path):
    """A child's start and end make one file in the run directory (on ext4 each file is an
    inode to allocate: follow.py's write_profile): the .started it makes as it starts becomes
    its profile, and the engine appends its exit status to it once the interpreter is done
    (exitstatus.h). Seen from the parent before the run ends (the directory goes then)."""
    parent = tmp_path / "parent.py"
    parent.write_text(ONE_FILE_PARENT)
    profile, run = _profile(run_heatline, tmp_path, str(parent))
    seen = json.loads(run.stdout)
    assert len(seen["names"]) == 1 and seen["names"][0].endswith(".prof"), seen
    assert seen["exit"] == "exit" and seen["after"] == "3", seen
    child = next(p for p in profile["processes"] if p["role"] != "main")
    assert child["exit"] == "exit 3"


def test_a_child_exit_status_and_signal_are_in_the_processes_list(run_heatline, tmp_path):
    """The status each child exited with, as its parent's wait saw it (`exit 3`), or the
    signal that ended it by name; in the profile and in the report's processes table."""
    path = _target("children_exits.py")
    profile, run = _profile(run_heatline, tmp_path, path)
    seen = json.loads(run.stdout)
    by_child = {p["argv"][-1]: p["exit"] for p in profile["processes"] if p["role"] != "main"}
    expected = {how: f"exit {status}" if status >= 0 else signal.Signals(-status).name
                for how, status in seen.items()}
    assert expected["exit3"] == "exit 3" and expected["interrupt"] == "SIGINT"  # as python does
    assert by_child == expected
    main = next(p for p in profile["processes"] if p["role"] == "main")
    assert main["exit"] == "exit 0"
    report = run_heatline("view", str(tmp_path / "profile.json"), text=True,
                          env={"COLUMNS": "200"})
    assert report.returncode == 0, report.stderr
    rows = [line for line in (report.stdout + report.stderr).splitlines()
            if "children_exits.py child" in line]
    assert sorted(re.search(r"(exit \d+|SIG[A-Z]+)", row).group(1) for row in rows) == sorted(
        expected.values())


TABLES_CHILD = """\
import json, sys
computed = "heatline.engine.opcodes" in sys.modules  # imported only to work the tables out
from heatline.engine import scope, session
from heatline.engine.opcodes import opcode_flags_table
print(json.dumps({"computed": computed,
                  "same": session._tables() == (scope.default_exclude_prefixes(),
                                                opcode_flags_table())}))
"""
TABLES_PARENT = """\
import os, subprocess, sys
home = sys.argv[2] if len(sys.argv) > 2 else None
env = None if home is None else dict(os.environ, HOME=home)
subprocess.run([sys.executable, sys.argv[1]], check=True, env=env)
"""


@pytest.mark.parametrize("same_home", [True, False])
def test_a_spawned_child_of_the_same_interpreter_takes_the_parents_engine_tables(
        run_heatline, tmp_path, same_home):
    """Working out the scope's prefixes and launchers (every launcher of the scripts
    directories read) and the opcode table was most of a spawned child's start: a child of the
    same interpreter, prefixes and user base is given the parent's, the very tables it would
    have worked out; one whose user base differs (another HOME) works its own out."""
    child, parent = tmp_path / "child.py", tmp_path / "parent.py"
    child.write_text(TABLES_CHILD)
    parent.write_text(TABLES_PARENT)
    args = [str(parent), str(child)] + ([] if same_home else [str(tmp_path)])
    _, run = _profile(run_heatline, tmp_path, *args)
    assert json.loads(run.stdout) == {"computed": not same_home, "same": True}


def test_a_childs_start_imports_only_the_modules_its_bytecode_is_made_for(run_heatline,
                                                                         tmp_path):
    """carrier.CHILD_MODULES, which the parent compiles for its children when heatline has no
    bytecode of its own, is every module of heatline's a child imports as it starts (the hook
    leaves heatline's modules in sys.modules)."""
    from heatline.run.carrier import CHILD_MODULES

    child, parent = tmp_path / "child.py", tmp_path / "parent.py"
    child.write_text("import json, sys\n"
                     "names = [m for m in sys.modules if m.startswith('heatline')]\n"
                     "print(json.dumps(sorted(names)))\n")
    parent.write_text(TABLES_PARENT)
    _, run = _profile(run_heatline, tmp_path, str(parent), str(child))
    imported = set(json.loads(run.stdout)) - {"heatline._native"}
    assert imported == set(CHILD_MODULES)


def test_child_sys_path_is_pythons_with_pythonpath_unset_empty_or_set(run_heatline, run_python,
                                                                       tmp_path):
    """heatline follows a Python child by putting its hook directory first on PYTHONPATH; the
    child's sys.path and PYTHONPATH must still be python's, PYTHONPATH="" included (python
    takes it as unset; "HOOK:" would have put the working directory on sys.path), whether the
    environment is given, inherited, or left by a preexec_fn."""
    extra = tmp_path / "extra"
    extra.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    script = _target("child_pythonpath.py")
    expected = run_python(script, str(extra), cwd=str(work), text=True)
    assert expected.returncode == 0, expected.stderr
    assert expected.stdout.count("\n") == 18
    assert str(work) not in expected.stdout
    out = tmp_path / "profile.json"
    result = run_heatline("-q", "-o", str(out), script, str(extra), cwd=str(work), text=True)
    assert (result.returncode, result.stderr) == (0, ""), result.stderr
    assert result.stdout == expected.stdout
    profile = json.loads(out.read_text())
    assert len(profile["processes"]) == 1 + 9  # every child was followed


def _time(entry):
    return entry["python_s"] + entry["native_s"] + entry["system_s"] + entry.get("cpu_wait_s", 0.0)


@timing
def test_pool_workers_waiting_for_work_is_their_idle_time_not_the_parents_line(run_heatline,
                                                                               tmp_path):
    """A fork worker waits for tasks under the frames it inherited from its parent (the `with
    Pool(...)` line among them, suspended there for the worker's whole life): that wait is the
    worker's idle time (the processes table's `idle_s`), not the parent's line's; the parent's
    compute and the workers' task are charged to their own lines (tests/targets/pool_idle.py)."""
    path = _target("pool_idle.py")
    profile, run = _profile(run_heatline, tmp_path, path)
    truth = json.loads(run.stdout)
    main = profile["processes"][0]
    assert main["pid"] == truth["pid"] and main["idle_s"] == 0.0
    own = profile["process_profiles"][str(main["pid"])]
    workers = {p["pid"]: p for p in profile["processes"][1:]}
    assert sorted(p["role"] for p in workers.values()) == ["Pool worker", "Pool worker"]
    resolution = {pid: profile["process_profiles"][str(pid)]["max_sample_gap_s"]
                  + profile["process_profiles"][str(pid)]["max_tick_s"] for pid in workers}
    # The `with` line: the parent's own time there (making the pool, then terminating it),
    # and nothing of the workers' but a sample at each edge of their life.
    with_line = _line(profile, path, "the pool waits here")
    parents = _line(own, path, "the pool waits here")
    assert _time(with_line) - _time(parents) <= 2 * sum(resolution.values()), (
        with_line, parents, profile["processes"])
    # The parent's compute is charged to its loop, as busy as it measured itself.
    gap, tick = own["max_sample_gap_s"], own["max_tick_s"]
    main_thread = next(thread for thread in own["threads"] if thread["main"])
    spin = _function(own, "spin", path)
    assert spin["python_s"] + spin["native_s"] + spin.get("cpu_wait_s", 0.0) == pytest.approx(
        truth["parent_busy_s"],
        abs=2 * (gap + tick) + 4 * math.sqrt(gap * truth["parent_busy_s"])
        + main_thread.get("engine_wait_s", 0.0)), (spin, truth, gap, tick)
    # Each worker: its task's loop gets its busy time; the rest of its life, waiting for
    # work, is its idle time (one stretch of waiting before each task and after the last,
    # each resolved within its sampling resolution at both ends).
    for pid, process in workers.items():
        tasks = [t for t in truth["tasks"] if t["pid"] == pid]
        worker = profile["process_profiles"][str(pid)]
        waited = sum(t.get("engine_wait_s", 0.0) for t in worker["threads"])
        tolerance = 2 * (len(tasks) + 1) * resolution[pid] + waited
        busy = sum(t["busy_s"] for t in tasks)
        if tasks:
            work = _function(worker, "spin", path)
            running = work["python_s"] + work["native_s"] + work.get("cpu_wait_s", 0.0)
            assert running == pytest.approx(busy, abs=tolerance)
        idle = process["elapsed_s"] - sum(t["wall_s"] for t in tasks)
        assert process["idle_s"] == pytest.approx(idle, abs=tolerance), (
            process, tasks, tolerance)
        assert worker["idle_s"] == process["idle_s"]


@timing
def test_joblib_workers_time_in_functions_of_main_is_charged_to_their_lines(run_heatline,
                                                                           tmp_path):
    """loky workers run functions of __main__ that cloudpickle rebuilt (file <dynamic-code>):
    their time goes to the script's lines, as much as the workers measured, and a child left
    without a profile is named with why (tests/targets/joblib_main.py)."""
    require_module("joblib", "test")
    path = _target("joblib_main.py")
    profile, run = _profile(run_heatline, tmp_path, path)
    truth = json.loads(run.stdout)
    spin = _function(profile, "spin", path)
    tolerance = _worker_tolerance_s(profile, stretches=4)
    running = spin["python_s"] + spin["native_s"] + spin.get("cpu_wait_s", 0.0)
    assert running == pytest.approx(truth["busy_s"], abs=tolerance), (
        spin, truth, tolerance, profile["warnings"])
    assert "<dynamic-code>" not in profile["files"]
    # loky's resource tracker outlives the program, as multiprocessing's does: not followed,
    # so no process is left without a profile.
    assert not any("left no profile" in warning for warning in profile["warnings"]), (
        profile["warnings"])
