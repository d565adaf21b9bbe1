"""`heatline attach PID`, run as a user runs it, against running targets whose truth is known
(tests/targets/attach_*.py): a window of a phased program attributed to its phases, a target
whose main thread sleeps in a system call, several threads, 20 attach/detach cycles that the
target cannot tell from a plain run, and every bad input.

The targets are children of the test, but `heatline attach` is not their parent: under Yama's
ptrace_scope 1 it could not attach, so each target first allows any process of its user to
(prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY)), as a user would (docs/live-tools.md, "Permissions").
"""

import glob
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from datetime import datetime

import pytest

import _tools
from conftest import PROGRAMS
from heatline import _native
from heatline.data import model
from heatline.engine import attach

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or os.uname().machine != "x86_64",
    reason="heatline attach: Linux x86_64 only")

PYENV = os.environ.get("PYENV_VERSIONS", os.path.expanduser("~/.pyenv/versions"))


def _env(tmp_path):
    env = {k: v for k, v in os.environ.items()
           if k not in ("XDG_RUNTIME_DIR", "FORCE_COLOR", "NO_COLOR", "COLUMNS")}
    env["TMPDIR"] = str(tmp_path)  # a control directory of the test's own
    return env


def _control_dir(tmp_path):
    return tmp_path / f"heatline-{os.geteuid()}"


def _start(tmp_path, target, *args, python=sys.executable, name="work", touch=(), options=(),
           env=None):
    """target started on its own (nothing attached yet), in tmp_path/name with the files
    named in touch made there first, once it says it is ready: (process, its directory).
    options: the interpreter's (-X ...); env: variables added to its environment."""
    work = tmp_path / name
    work.mkdir(exist_ok=True)
    for file in touch:
        (work / file).touch()
    process = subprocess.Popen([python, *options, os.path.join(PROGRAMS, target), str(work),
                                *args], env={**_env(tmp_path), **(env or {})},
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120  # a hang guard only
    while not (work / "ready").exists():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the target never got ready"
        time.sleep(0.01)
    return process, work


def _attach(tmp_path, pid, *args, timeout=300, **kwargs):
    done = subprocess.run([sys.executable, "-m", "heatline", "attach", str(pid), *args],
                          env=_env(tmp_path), capture_output=True, text=True, timeout=timeout,
                          check=False, **kwargs)
    assert "Traceback" not in done.stderr, done.stderr
    if done.returncode == 1 and "did not start profiling within" in done.stderr:
        # Every thread's stack at that moment (heatline dump reads it from outside), for the
        # diagnosis (this is how the start's GIL starvation was found: engine/attach.py,
        # QUICK_SWITCH_US).
        try:
            stacks = subprocess.run([sys.executable, "-m", "heatline", "dump", str(pid)],
                                    capture_output=True, text=True, timeout=60, check=False)
            stacks = stacks.stdout + stacks.stderr
        except subprocess.TimeoutExpired:
            stacks = "(heatline dump did not answer within 60 s)"
        try:
            os.kill(pid, signal.SIGKILL)  # the test ends here: its target must not outlive it
        except ProcessLookupError:
            pass
        pytest.fail(f"{done.stderr.strip()}\n{stacks}")
    return done


def _profile(path):
    """The profile heatline attach wrote, which must match the profile's model exactly."""
    profile = json.loads(path.read_text())
    assert model.mismatches(profile) == []
    return profile


def _finish(process, work):
    (work / "finish").touch()
    stdout, stderr = process.communicate(timeout=120)
    return process.returncode, stdout, stderr


def _epoch(iso):
    return datetime.strptime(iso, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=__import__("datetime").timezone.utc).timestamp()


def _functions(profile, file_end):
    [entry] = [e for path, e in profile["files"].items() if path.endswith(file_end)]
    return {f["qualname"]: f for f in entry["functions"]}


def _window_s(profile):
    """How long the engine was on: the profiled period (the stop's own work after it, which
    elapsed_s includes, is not profiled)."""
    return sum(end - start for start, end in profile["profiled_periods"])


def _thread_tasks(pid):
    return sorted(int(t) for t in os.listdir(f"/proc/{pid}/task"))


# ---- what is profiled ---------------------------------------------------------------------------


def test_a_window_of_a_phased_program_is_attributed_to_its_phases(tmp_path):
    """Attached 1 s into the program, for 2 s: each phase's share of the window's phase time
    within 3 pp of its truth (the phases' wall intervals, as the program timed them, cut to the
    window the profile covers), and each phase's time of its own kind (>= 90%)."""
    process, work = _start(tmp_path, "attach_phases.py")
    time.sleep(1.0)
    out = tmp_path / "p.json"
    done = _attach(tmp_path, process.pid, "--duration", "2", "-q", "-o", str(out))
    assert done.returncode == 0, done.stderr
    status, _, stderr = _finish(process, work)
    assert status == 0, stderr

    profile = _profile(out)
    assert profile["attached"]["ended_by"] == "detach"
    assert profile["attached"]["pid"] == process.pid
    assert profile["attached"]["attach_s"] > 0 and profile["attached"]["detach_s"] > 0
    start = _epoch(profile["started_at"])
    end = start + _window_s(profile)
    assert _window_s(profile) >= 1.9
    truth = {}
    for name, begun, ended, busy in json.loads((work / "truth.json").read_text()):
        overlap = max(0.0, min(end, ended) - max(start, begun))
        if overlap > 0:
            # a cut instance: its wall time in the window (the phase runs all along it)
            truth[name] = truth.get(name, 0.0) + overlap
    functions = _functions(profile, "attach_phases.py")
    measured = {name: sum(functions[name].get(k, 0.0)
                           for k in ("python_s", "native_s", "system_s", "cpu_wait_s"))
                for name in truth if name in functions}
    assert set(measured) == {"python_phase", "native_phase", "system_phase"}, functions.keys()
    total_truth, total_measured = sum(truth.values()), sum(measured.values())
    # Each phase boundary inside the window may move at most one sampling gap of time between
    # neighbours, and the window's two ends one gap each.
    slack = 2 * profile["max_sample_gap_s"] / total_truth
    for name in truth:
        share_truth = truth[name] / total_truth
        share = measured[name] / total_measured
        assert abs(share - share_truth) <= 0.03 + slack, (name, share, share_truth, truth,
                                                          measured)
    kinds = {"python_phase": "python_s", "native_phase": "native_s", "system_phase": "system_s"}
    for name, kind in kinds.items():  # of the time not spent waiting for a CPU
        waited = functions[name].get("cpu_wait_s", 0.0)
        assert functions[name][kind] >= 0.9 * (measured[name] - waited), (name, functions[name])


def test_memory_is_counted_from_the_attach_on(tmp_path):
    """A line allocating 1 MiB every 10 ms: the bytes charged to it are its allocations inside
    the window (from the target's own record) within 5%; the 50 MiB the program allocated
    before the attach and still holds is not counted, on its line or in the peak."""
    process, work = _start(tmp_path, "attach_memory.py")
    time.sleep(0.5)
    out = tmp_path / "p.json"
    done = _attach(tmp_path, process.pid, "--duration", "2", "-q", "-o", str(out))
    assert done.returncode == 0, done.stderr
    status, _, stderr = _finish(process, work)
    assert status == 0, stderr
    profile = _profile(out)
    truth = json.loads((work / "truth.json").read_text())
    start = _epoch(profile["started_at"])
    end = start + _window_s(profile)
    inside = sum(1 for t in truth["times"] if start <= t <= end)
    assert inside >= 50, inside  # the window saw enough of them to count
    [entry] = [e for path, e in profile["files"].items() if path.endswith("attach_memory.py")]
    lines = {line["source"].strip(): line for line in entry["lines"]}
    block = lines["block = bytearray(BLOCK)  # the window's allocations"]
    allocated = block["alloc_python_bytes"] + block["alloc_native_bytes"]
    expected = inside * truth["block_bytes"]
    # The window's two ends may each cut one allocation off (its time is recorded just after).
    assert abs(allocated - expected) <= 0.05 * expected + 2 * truth["block_bytes"], (
        allocated, expected, inside)
    before = lines.get("held = bytearray(50 << 20)  # held before the attach: not the window's")
    assert before is None or before["alloc_python_bytes"] + before["alloc_native_bytes"] == 0
    assert profile["peak_bytes"] < 50 << 20, profile["peak_bytes"]


def test_a_target_sleeping_in_a_system_call_is_attached_and_keeps_sleeping(tmp_path):
    """The main thread sleeps in time.sleep(600) (blocked in the kernel, the GIL released); a
    worker spins, letting go of the GIL for a system call every millisecond or so and taking it
    straight back: heatline's thread, which needs the GIL after each of its own system calls,
    starved behind it for up to a minute until the attach shortened the switch interval while
    it starts and stops (engine/switching.py, QUICK_SWITCH_US). The worker's time is the window's,
    all Python; after the detach the main thread is still in the same sleep, the process has its
    two threads again, and its switch interval is its own."""
    process, work = _start(tmp_path, "attach_sleeper.py", "600")
    pid = process.pid
    before = _thread_tasks(pid)
    own_interval = _native.switch_interval(pid, 0, 0)
    assert own_interval == 5000  # CPython's default, 5 ms
    out = tmp_path / "p.json"
    done = _attach(tmp_path, pid, "--duration", "1", "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert _thread_tasks(pid) == before
    assert _native.switch_interval(pid, 0, 0) == own_interval
    # The report, on stdout: the attached window, the worker's hot function.
    assert done.stdout.startswith("heatline profile of ") and "\nattached to process " \
        f"{pid} at " in done.stdout, done.stdout
    assert re.search(r"^spin \S*attach_sleeper\.py:\d+ ", done.stdout, re.MULTILINE), done.stdout
    assert done.stderr.startswith(f"heatline: attached to process {pid} (Python "), done.stderr
    with open(f"/proc/{pid}/task/{pid}/syscall") as file:
        call = int(file.read().split()[0])
    assert call in (35, 230, 23, 270), call  # nanosleep, clock_nanosleep, select, pselect6
    profile = _profile(out)
    spin = _functions(profile, "attach_sleeper.py")["spin"]
    spun = _all_time(spin)
    # The worker ran all along the window: its time is the window's, less at most a gap.
    window = _window_s(profile)
    assert abs(spun - window) <= 0.05 * window + profile["max_sample_gap_s"], (spun, window)
    # Its loop's body is pure Python: no native time there beyond a sample's (only the
    # os.path.exists line between two loops calls C: a stat). The body may show system time:
    # waiting for the GIL while heatline's own threads hold it at the window's two ends (the
    # start's last steps, the stop's first), 47 ms of 1 s at load 6.
    [entry] = [e for path, e in profile["files"].items() if path.endswith("attach_sleeper.py")]
    body = [line for line in entry["lines"]
            if line["source"].strip() in ("for i in range(20000):", "total += i * i")]
    assert len(body) == 2, entry["lines"]
    # (On a busy machine part of the window is spent waiting for a CPU, of no kind.)
    assert sum(line["python_s"] + line.get("cpu_wait_s", 0.0) for line in body) >= 0.5 * spun, (
        body, spun)
    for line in body:
        assert line["native_s"] <= profile["max_sample_gap_s"], line
    # The threads are the program's two (the agent's own thread, heatline's, is left out).
    assert sorted(t["native_id"] for t in profile["threads"]) == before
    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=60)


@pytest.mark.parametrize("kind", ["sleep", "select", "lock", "event"])
def test_a_blocked_call_takes_its_full_time(tmp_path, kind):
    """A main thread blocked in a sleep, a select, a lock or an event wait while attached and
    detached: its call lasts as long as it would have (the kernel restarts the interrupted
    system call, CPython retries it: PEP 475), and the program prints what it would."""
    work = tmp_path / "work"
    work.mkdir()
    code = (
        "import os, select, sys, threading, time\n"
        f"sys.path.insert(0, {PROGRAMS!r})\n"
        "from _attachable import allow_tracing, mark\n"
        "allow_tracing()\n"
        f"mark({str(work)!r}, 'ready')\n"
        "begun = time.monotonic()\n"
        f"kind = {kind!r}\n"
        "if kind == 'sleep': time.sleep(3)\n"
        "elif kind == 'select': select.select([os.pipe()[0]], [], [], 3)\n"
        "elif kind == 'lock':\n"
        "    lock = threading.Lock(); lock.acquire(); lock.acquire(timeout=3)\n"
        "else: threading.Event().wait(3)\n"
        "print(time.monotonic() - begun >= 3, threading.active_count(), flush=True)\n")
    process = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=_env(tmp_path))
    while not (work / "ready").exists():
        assert process.poll() is None, process.communicate()
        time.sleep(0.01)
    time.sleep(0.2)  # into the call
    done = _attach(tmp_path, process.pid, "--duration", "0.3", "-q")
    assert done.returncode == 0, done.stderr
    stdout, stderr = process.communicate(timeout=120)
    assert (process.returncode, stdout, stderr) == (0, "True 1\n", "")


def test_every_thread_of_a_multi_threaded_target_is_profiled(tmp_path):
    process, work = _start(tmp_path, "attach_threads.py", "3")
    out = tmp_path / "p.json"
    done = _attach(tmp_path, process.pid, "--duration", "1", "-q", "-o", str(out))
    assert done.returncode == 0, done.stderr
    status, stdout, stderr = _finish(process, work)
    assert (status, stdout) == (0, "done\n"), stderr
    profile = _profile(out)
    window = _window_s(profile)
    slack = 0.05 * window + 2 * profile["max_sample_gap_s"]
    # Each worker ran (or waited for the GIL, its own time too) all along the window.
    workers = [t for t in profile["threads"] if not t["main"]
               and _all_time(t) > 0.2 * window]
    assert len(workers) == 3, profile["threads"]
    # by the names the program gave them, read in it while attached
    assert sorted(t.get("name") for t in workers) == ["w0", "w1", "w2"]
    for thread in workers:
        charged = _all_time(thread)
        assert abs(charged - window) <= slack, (thread, window)
    spin = _functions(profile, "attach_threads.py")["spin"]
    spun = _all_time(spin)
    assert abs(spun - 3 * window) <= 3 * slack, (spun, window)


def test_twenty_attach_detach_cycles_leave_the_program_as_it_was(tmp_path):
    """Attached and detached 20 times, the program prints byte for byte what a plain run
    prints: the same threads, signal handlers, trace functions, atexit handlers and open
    descriptors at the end; no heatline thread is left after any detach; no file is left in
    heatline's directory."""
    _, *plain_out = _finish(*_start(tmp_path, "attach_steady.py", name="plain"))

    process, work = _start(tmp_path, "attach_steady.py")
    before = _thread_tasks(process.pid)
    for cycle in range(20):
        out = tmp_path / f"p{cycle}.json"
        done = _attach(tmp_path, process.pid, "--duration", "0.2", "-q", "-o", str(out))
        assert done.returncode == 0, (cycle, done.stderr)
        assert _thread_tasks(process.pid) == before, cycle
        profile = _profile(out)
        assert profile["attached"]["ended_by"] == "detach"
        assert _functions(profile, "attach_steady.py")  # each window saw the program
    status, stdout, stderr = _finish(process, work)
    assert (status, stdout, stderr) == (0, *plain_out)
    assert os.listdir(_control_dir(tmp_path)) == []


def test_a_program_that_forks_while_attached(tmp_path):
    """A program forking a child every 20 ms while attached, through the detach and after: its
    output is a plain run's, byte for byte (on 3.12+, os.fork() warns when the process has more
    than one thread: while attached heatline's only thread is the sampler, which the engine
    takes out of a fork, and a fork waits for the thread that stops the profile to be done and
    gone: detach.h); every child exits 0. The children forked while attached are followed
    (each in the profile once, as a fork child that exited 0) and do not end the parent's
    attach (the at-exit writer is the attached process's only). The program starts forking
    once attached: a fork during the attach itself may still be counted with the agent's
    thread (docs/live-tools.md, known limits)."""
    plain, plain_work = _start(tmp_path, "attach_forks.py", name="plain", touch=("go",))
    time.sleep(1.5)
    _, *plain_out = _finish(plain, plain_work)
    assert plain.returncode == 0 and plain_out == ["children all exited 0: True\n", ""], plain_out

    process, work = _start(tmp_path, "attach_forks.py")
    out = tmp_path / "p.json"
    attacher = subprocess.Popen(
        [sys.executable, "-m", "heatline", "attach", str(process.pid), "--duration", "1", "-q",
         "-o", str(out)], env=_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True)
    first = attacher.stderr.readline()
    assert "attached to process" in first, first + attacher.communicate()[1]
    (work / "go").touch()
    _, rest = attacher.communicate(timeout=300)
    assert attacher.returncode == 0, first + rest
    time.sleep(0.3)  # forks after the detach too
    status, stdout, stderr = _finish(process, work)
    assert (status, stdout, stderr) == (0, *plain_out)
    profile = _profile(out)
    assert profile["attached"]["ended_by"] == "detach"
    assert profile["attached"]["pid"] == process.pid
    assert _window_s(profile) >= 0.9  # profiled until the detach, not until a child's exit
    main, *children = profile["processes"]
    assert main["pid"] == process.pid and children, profile["processes"]
    assert len({child["pid"] for child in children}) == len(children)
    # Each exited 0; a child whose profile was written but whose interpreter had not finished
    # exiting when the attacher collected shows "exit" (status not known yet: profile-format.md),
    # which a loaded machine makes likelier (seen beside two busy loops).
    ended = {(child["role"], child["exit"], child["ppid"]) for child in children}
    assert ("fork child", "exit 0", process.pid) in ended, children
    assert ended <= {("fork child", "exit 0", process.pid), ("fork child", "exit", process.pid)}


def test_a_program_forking_during_the_attach_never_hangs_a_child(tmp_path):
    """Forking every 20 ms all along the attach: heatline's thread imports heatline while the
    program forks, and a child that inherited a module half imported (its lock held by a
    thread the child does not have) would hang at its exit, so a fork waits until
    heatline's thread is done (agent.c's fork guard). Every child exits 0 and the program ends as
    usual. (On 3.12+ a fork in the moment the agent's thread exists may be warned about: the
    one line allowed besides.)"""
    process, work = _start(tmp_path, "attach_forks.py")
    (work / "go").touch()
    done = _attach(tmp_path, process.pid, "--duration", "1", "-q")
    assert done.returncode == 0, done.stderr
    status, stdout, stderr = _finish(process, work)
    stderr = re.sub(r"\S+attach_forks\.py:\d+: DeprecationWarning: This process \(pid=\d+\) "
                    r"is multi-threaded, use of fork\(\) may lead to deadlocks in the "
                    r"child\.\n  child = os\.fork\(\)\n", "", stderr)
    assert (status, stdout, stderr) == (0, "children all exited 0: True\n", "")


def _attacher(tmp_path, pid, *args):
    """heatline attach started in the background until Ctrl-C, once it says it is attached:
    (the process, its first line). A job started in the background (a CI run under nohup or
    &) inherits SIGINT ignored, which python leaves so: the default disposition is given
    back, as a foreground command has it."""
    attacher = subprocess.Popen(
        [sys.executable, "-m", "heatline", "attach", str(pid), *args], env=_env(tmp_path),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    first = attacher.stderr.readline()
    assert "attached to process" in first, first + attacher.communicate()[1]
    return attacher, first


def _wait_file(path, process):
    deadline = time.monotonic() + 300  # a hang guard only
    while not path.exists():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, f"{path.name} never came"
        time.sleep(0.01)


def _spun(process_profile):
    spin = _functions(process_profile, "attach_children.py").get("spin")
    return 0.0 if spin is None else _all_time(spin)


def _all_time(entry):
    """A function's or thread's whole charged time: running, blocked and waiting for a CPU."""
    return sum(entry.get(k, 0.0) for k in ("python_s", "native_s", "system_s", "cpu_wait_s"))


def test_children_started_while_attached_are_followed_and_merged(tmp_path):
    """Attached, the program runs a fork Pool(2), a Python subprocess and a spawned
    multiprocessing process, each spinning a known wall time in spin: each is in the profile
    the attacher writes, once, with its own role, and its spin charged the time it recorded
    (within 5% and two of its sampling gaps). The program's own environment never holds a
    variable of heatline's (os.environ and the C environment, printed while attached). A Pool
    worker started while attached and still running at the detach is counted as missing, as
    a run counts a child still running at its end, and stops profiling once the attacher has
    removed the attach's directory. After the detach, a fork child and a subprocess are not
    followed (no sampler thread, no engine loaded in the subprocess, no heatline variable in
    its environment, not in the profile), the program has its own threads only, and its
    output is a plain run's, byte for byte."""
    _, *plain_out = _finish(*_start(tmp_path, "attach_children.py", name="plain",
                                    touch=("go", "after")))
    plain_out[1] = re.sub(r"\(pid=\d+\)", "(pid=N)", plain_out[1])
    # (On 3.12+ its os.fork() after the detach warns that the process is multi-threaded: the
    # kept Pool's threads are the program's own; a plain run prints it too.)
    assert "\ndone\n" in plain_out[0], plain_out

    process, work = _start(tmp_path, "attach_children.py")
    out = tmp_path / "p.json"
    attacher, _ = _attacher(tmp_path, process.pid, "-q", "-o", str(out))
    (work / "go").touch()
    _wait_file(work / "attached-done", process)
    attacher.send_signal(signal.SIGINT)  # Ctrl-C: detach
    _, stderr = attacher.communicate(timeout=300)
    assert attacher.returncode == 0, stderr
    assert f"detached from process {process.pid}" in stderr, stderr
    assert _thread_tasks(process.pid) == json.loads((work / "threads.json").read_text())
    (work / "after").touch()
    for name in ("after-fork.json", "after-later.json", "after-keeper.json"):
        _wait_file(work / name, process)
    status, stdout, stderr = _finish(process, work)
    stderr = re.sub(r"\(pid=\d+\)", "(pid=N)", stderr)
    assert (status, stdout, stderr) == (0, *plain_out)

    profile = _profile(out)
    assert profile["attached"]["ended_by"] == "detach"
    processes = {p["pid"]: p for p in profile["processes"]}
    assert len(processes) == len(profile["processes"])  # each process once
    assert profile["processes"][0]["pid"] == process.pid
    assert processes[process.pid]["role"] == "main"
    assert processes[process.pid]["exit"] == "detached"
    # The kept Pool's worker, still running at the detach, is counted as a run counts a child
    # still running at its end; nothing else is missing.
    keeper = json.loads((work / "keeper.json").read_text())
    assert keeper not in processes
    assert [w for w in profile["warnings"] if "no profile" in w or "could not" in w] == [
        "1 child process left no profile (killed by a signal such as SIGKILL, or still running "
        "at the detach): its work is missing"], profile["warnings"]
    truth = {}
    for name in ("pool-a", "pool-b", "subprocess", "spawned"):
        pid, begun, ended = json.loads((work / f"truth-{name}.json").read_text())
        assert pid in processes, (name, pid, profile["processes"])
        truth.setdefault(pid, []).append((name, ended - begun))
        assert processes[pid]["ppid"] == process.pid
    roles = {name: processes[pid]["role"] for pid, spins in truth.items() for name, _ in spins}
    assert roles["pool-a"] == roles["pool-b"] == "Pool worker", roles
    assert roles["subprocess"] == "python subprocess", roles
    assert roles["spawned"].startswith("multiprocessing process"), roles
    for pid, spins in truth.items():
        child = profile["process_profiles"][str(pid)]
        expected = sum(seconds for _, seconds in spins)
        spun = _spun(child)
        slack = 0.05 * expected + 2 * child["max_sample_gap_s"] * len(spins)
        assert abs(spun - expected) <= slack, (spins, spun, child["max_sample_gap_s"])
    # The main process spun nothing itself; its children's time is theirs.
    assert _spun(profile["process_profiles"][str(process.pid)]) == 0.0

    # The kept worker stopped profiling once the attacher removed the attach's directory: its
    # sampler thread is gone.
    alone = json.loads((work / "after-keeper.json").read_text())
    assert alone["pid"] == keeper and alone["threads"] == 1, alone
    for name in ("fork", "later"):
        after = json.loads((work / f"after-{name}.json").read_text())
        assert after["pid"] not in processes, (name, after)
        assert after["threads"] == 1, (name, after)  # no sampler thread
        # heatline's own variables none (the suite's, HEATLINE_REQUIRE_*, are the program's)
        own = sorted(k for k in os.environ if k.startswith("HEATLINE"))
        assert sorted(set(after["variables"]) - set(own)) == [], (name, after)
    assert json.loads((work / "after-later.json").read_text())["engine"] is False
    assert os.listdir(_control_dir(tmp_path)) == []


def test_pprof_server_while_attached(tmp_path):
    """heatline attach --pprof-server 127.0.0.1:0: the attacher says where the server listens
    (the server runs in the target, whose stderr stays the program's), `go tool pprof` reads a
    1 s CPU profile there naming the spinning worker's function first, and after the detach
    the server's thread is gone (the process has its own threads only) and its port closed."""
    process, work = _start(tmp_path, "attach_sleeper.py", "600")
    pid = process.pid
    before = _thread_tasks(pid)
    said = tmp_path / "attacher.err"
    with open(said, "w") as stderr:  # read as it comes, without blocking on it
        attacher = subprocess.Popen(
            [sys.executable, "-m", "heatline", "attach", str(pid), "-q", "--pprof-server",
             "127.0.0.1:0"], env=_env(tmp_path), stdout=subprocess.PIPE, stderr=stderr,
            text=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    pattern = re.compile(r"heatline: attached to process \d+ .*\n"
                         r"heatline: pprof server on (http://127\.0\.0\.1:(\d+)/debug/pprof/)\n")
    deadline = time.monotonic() + 300  # a hang guard only
    while not (match := pattern.match(said.read_text())):
        if attacher.poll() is not None or time.monotonic() > deadline:
            attacher.kill()
            attacher.communicate()
            pytest.fail(said.read_text())
        time.sleep(0.05)
    url, port = match.group(1), int(match.group(2))
    try:
        top = _tools.pprof_top(url + "profile?seconds=1", tmp_path)
        rows = [line.split() for line in top.splitlines()]
        rows = [fields[5] for fields in rows
                if len(fields) >= 6 and fields[1].endswith("%") and fields[4].endswith("%")]
        assert rows and rows[0] == "spin", top
    finally:
        attacher.send_signal(signal.SIGINT)  # Ctrl-C: detach
        attacher.communicate(timeout=300)
    assert attacher.returncode == 0, said.read_text()
    assert "detached from process" in said.read_text()
    assert _thread_tasks(pid) == before
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=60).close()
    process.send_signal(signal.SIGKILL)
    _, stderr = process.communicate(timeout=60)
    assert stderr == ""  # nothing of heatline's on the program's stderr


# ---- bad input ----------------------------------------------------------------------------------


def _error(done):
    assert done.returncode != 0
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("heatline: error: "), done.stderr
    return lines[0]


def test_no_such_process(tmp_path):
    line = _error(_attach(tmp_path, 4194305 + 10))
    assert "no process" in line


def test_not_a_python_process(tmp_path):
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        line = _error(_attach(tmp_path, sleeper.pid))
        assert "python" in line.lower(), line
    finally:
        sleeper.kill()
        sleeper.wait()


def test_a_python_of_another_version_is_refused_before_touching_it(tmp_path):
    mine = f"{sys.version_info[0]}.{sys.version_info[1]}"
    others = [path for minor in range(9, 14) if f"3.{minor}" != mine
              for path in sorted(glob.glob(os.path.join(PYENV, f"3.{minor}.*", "bin",
                                                        f"python3.{minor}")))[-1:]]
    if not others:
        pytest.skip("no other CPython 3.9-3.13 installed")
    process, work = _start(tmp_path, "attach_sleeper.py", "600", python=others[0])
    try:
        line = _error(_attach(tmp_path, process.pid))
        assert f"runs on Python {mine}" in line, line
        with open(f"/proc/{process.pid}/maps") as file:
            assert "_agent" not in file.read()  # nothing was loaded
    finally:
        process.kill()
        process.communicate()


def test_ptrace_refused_says_why(tmp_path):
    """A target of another user, heatline without CAP_SYS_PTRACE: refused, with the reason."""
    if os.geteuid() != 0 or not _which("setpriv"):
        pytest.skip("needs root and setpriv to make a process heatline may not trace")
    target = subprocess.Popen(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                               "sleep", "60"])
    try:
        time.sleep(0.3)
        done = subprocess.run(
            ["setpriv", "--inh-caps=-sys_ptrace", "--bounding-set=-sys_ptrace",
             sys.executable, "-m", "heatline", "attach", str(target.pid)],
            env=_env(tmp_path), capture_output=True, text=True, timeout=120, check=False)
        line = _error(done)
        assert "not allowed" in line and "65534" in line and "CAP_SYS_PTRACE" in line, line
        assert "heatline dump" not in line
    finally:
        target.kill()
        target.wait()


def _which(name):
    return any(os.access(os.path.join(d, name), os.X_OK)
               for d in os.environ.get("PATH", "").split(os.pathsep))


def test_a_target_that_exits_while_attached_still_gives_its_profile(tmp_path):
    process, work = _start(tmp_path, "attach_steady.py")
    out = tmp_path / "p.json"
    attacher = subprocess.Popen(
        [sys.executable, "-m", "heatline", "attach", str(process.pid), "--duration", "300",
         "-q", "-o", str(out)], env=_env(tmp_path), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    while "attached to process" not in (attacher.stderr.readline() or "attached to process"):
        pass
    time.sleep(0.3)
    status, stdout, _ = _finish(process, work)
    assert status == 0 and "\ndone\n" in stdout
    _, stderr = attacher.communicate(timeout=120)
    assert attacher.returncode == 0, stderr
    assert f"process {process.pid} exited while attached" in stderr
    profile = _profile(out)
    assert profile["attached"]["ended_by"] == "exit"
    assert _functions(profile, "attach_steady.py")


def test_a_target_killed_while_attached_is_said_so(tmp_path):
    process, work = _start(tmp_path, "attach_steady.py")
    attacher = subprocess.Popen(
        [sys.executable, "-m", "heatline", "attach", str(process.pid), "--duration", "300"],
        env=_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first = attacher.stderr.readline()
    assert "attached to process" in first, first
    process.kill()
    process.communicate()
    stdout, stderr = attacher.communicate(timeout=120)
    assert attacher.returncode == 1 and stdout == ""
    assert stderr.splitlines() == [
        f"heatline: error: process {process.pid} exited while attached, without writing its "
        "profile (it was killed, or left through os._exit): nothing to report"]


def test_attaching_twice_at_once_is_refused(tmp_path):
    process, work = _start(tmp_path, "attach_steady.py")
    # A job started in the background (a CI run under nohup or &) inherits SIGINT ignored, and
    # python then leaves it so: the Ctrl-C below would never reach this attach (CI saw it wait
    # out its --duration). A foreground command has the default disposition.
    first = subprocess.Popen(
        [sys.executable, "-m", "heatline", "attach", str(process.pid), "--duration", "300",
         "-q"], env=_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert "attached to process" in first.stderr.readline()
    line = _error(_attach(tmp_path, process.pid))
    assert f"process {process.pid} is being attached to already" in line, line
    first.send_signal(signal.SIGINT)  # Ctrl-C: detach
    _, stderr = first.communicate(timeout=120)
    assert first.returncode == 0, stderr
    assert "detached from process" in stderr
    status, stdout, _ = _finish(process, work)
    assert status == 0 and "\ndone\n" in stdout


def test_a_program_profiled_already_is_refused(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    process = subprocess.Popen(
        [sys.executable, "-m", "heatline", "-q", os.path.join(PROGRAMS, "attach_steady.py"),
         str(work)], env=_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True)
    while not (work / "ready").exists():
        assert process.poll() is None, process.communicate()
        time.sleep(0.01)
    line = _error(_attach(tmp_path, process.pid))
    assert "already" in line or "under the heatline command" in line, line
    status, _, stderr = _finish(process, work)
    assert status == 0, stderr


def test_bad_pid_text(tmp_path):
    line = _error(_attach(tmp_path, "abc"))
    assert "PID must be a process id" in line


def test_an_option_attach_cannot_honour_is_refused(tmp_path):
    line = _error(_attach(tmp_path, 4194305 + 10, "--write-interval", "1"))
    assert "--write-interval is not available with heatline attach" in line


def test_an_attach_without_answer_says_how_far_heatlines_thread_came(tmp_path):
    """The one-line error of an attach that got no answer names the agent's thread, its last
    step (DIR/progress, written by agent.c) and what the kernel says it is doing now."""
    from heatline.engine.attach import _progress

    assert _progress(os.getpid(), str(tmp_path)) == "heatline's thread never ran"
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (tmp_path / "progress").write_text(f"{sleeper.pid} waiting-gil\n")
        # time.sleep's system call: clock_nanosleep (3.11+), nanosleep, or select / pselect6
        # (3.9 and 3.10 sleep in select()).
        sleeping = re.compile(f"heatline's thread {sleeper.pid}: waiting for the GIL, state S, "
                              r"system call (35|230|23|270)$")
        deadline = time.monotonic() + 60  # a hang guard only
        while True:  # until it sleeps in its system call
            said = _progress(sleeper.pid, str(tmp_path))
            if sleeping.match(said) or time.monotonic() > deadline:
                break
            time.sleep(0.01)
        assert sleeping.match(said), said
    finally:
        sleeper.kill()
        sleeper.wait()
    assert _progress(sleeper.pid, str(tmp_path)) == (
        f"heatline's thread {sleeper.pid}: waiting for the GIL, ended")


REMOTE_EXEC = hasattr(sys, "remote_exec")  # PEP 768, CPython 3.14+


def test_the_first_line_and_the_profile_say_how_the_attach_came_in(tmp_path):
    """3.14+: a program whose main thread runs Python is attached through sys.remote_exec, and
    its script, having run, is not left behind. Before 3.14 the agent, with nothing to explain.
    The program's output is its own either way."""
    process, work = _start(tmp_path, "attach_steady.py")
    out = tmp_path / "p.json"
    done = _attach(tmp_path, process.pid, "--duration", "0.3", "-q", "-o", str(out))
    assert done.returncode == 0, done.stderr
    first = done.stderr.splitlines()[0]
    method = json.loads(out.read_text())["attached"]["method"]
    if REMOTE_EXEC:
        assert "ms through sys.remote_exec (PEP 768); profiling for 0.3 s" in first, first
        assert method == "remote_exec"
    else:
        assert "ms through heatline's agent (ptrace); profiling for 0.3 s" in first, first
        assert method == "agent"
    assert os.listdir(_control_dir(tmp_path)) == []
    code, stdout, stderr = _finish(process, work)
    assert (code, stderr) == (0, ""), stderr
    assert "\ndone\n" in stdout, stdout


@pytest.mark.skipif(not REMOTE_EXEC, reason="sys.remote_exec (PEP 768) is CPython 3.14+")
@pytest.mark.parametrize("how", ["PYTHON_DISABLE_REMOTE_DEBUG", "-X disable-remote-debug"])
def test_a_program_that_refuses_remote_exec_gets_the_agent_and_the_reason(tmp_path, how):
    options = ("-X", "disable-remote-debug") if how.startswith("-X") else ()
    env = {"PYTHON_DISABLE_REMOTE_DEBUG": "1"} if not options else {}
    process, work = _start(tmp_path, "attach_steady.py", options=options, env=env)
    out = tmp_path / "p.json"
    done = _attach(tmp_path, process.pid, "--duration", "0.3", "-q", "-o", str(out))
    assert done.returncode == 0, done.stderr
    reason = ("PYTHON_DISABLE_REMOTE_DEBUG is set in it" if env
              else "it runs with -X disable-remote-debug")
    assert (f"through heatline's agent (ptrace); not sys.remote_exec: {reason}; profiling"
            in done.stderr.splitlines()[0]), done.stderr
    assert json.loads(out.read_text())["attached"]["method"] == "agent"
    code, _, stderr = _finish(process, work)
    assert (code, stderr) == (0, ""), stderr


@pytest.mark.skipif(not REMOTE_EXEC, reason="sys.remote_exec (PEP 768) is CPython 3.14+")
def test_a_blocked_main_thread_gets_the_agent_and_its_late_script_does_nothing(tmp_path):
    """The main thread waits in a C call the whole attach: sys.remote_exec's script cannot run
    within attach.REMOTE_EXEC_WAIT_S, so the agent takes the attach. When the main thread
    wakes, long after the detach, it runs the pending script (the interpreter's audit event
    says so), which finds the attach over and does nothing: nothing on the program's
    stderr."""
    process, work = _start(tmp_path, "attach_blocked_main.py")
    out = tmp_path / "p.json"
    done = _attach(tmp_path, process.pid, "--duration", "0.3", "-q", "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert ("through heatline's agent (ptrace); not sys.remote_exec: its main thread reached "
            f"no safe point within {attach.REMOTE_EXEC_WAIT_S:g} s; profiling"
            in done.stderr.splitlines()[0]), done.stderr
    profile = _profile(out)
    assert profile["attached"]["method"] == "agent"
    assert "spin" in _functions(profile, "attach_blocked_main.py")
    # The script stays while it may still run (the interpreter reports one it cannot open).
    assert os.listdir(_control_dir(tmp_path)) == [f"remote-exec-{process.pid}.py"]
    code, stdout, stderr = _finish(process, work)
    assert (code, stderr) == (0, ""), stderr
    assert stdout == "woken; remote_exec scripts run: 1\n", stdout


def test_regions_and_steps_from_the_moment_of_attaching(tmp_path):
    """A program marking regions and steps before anything attaches: the attached window's
    profile has its regions (counted from the attach: an entry open then counts from then on)
    and the steps that started while attached, each the program's own step to the clock's
    reading (the program's marks and heatline's are a clock read apart)."""
    process, work = _start(tmp_path, "attach_regions.py")
    out = tmp_path / "p.json"
    done = _attach(tmp_path, process.pid, "--duration", "1.5", "-q", "-o", str(out))
    assert done.returncode == 0, done.stderr
    status, stdout, stderr = _finish(process, work)
    assert status == 0, stderr
    marks = json.loads(stdout.strip().splitlines()[-1])["marks"]
    profile = _profile(out)
    regions = {r["path"]: r for r in profile["regions"]}
    assert set(regions) == {"step", "step/work"}, regions
    # counted from the attach: the entries closed in the window are the program's marks in it
    # (each loop closes "step" right before its mark), give or take the one at each edge
    start, end = profile["started_at_epoch"], profile["started_at_epoch"] + profile["elapsed_s"]
    inside = sum(start <= mark <= end for mark in marks)
    assert abs(regions["step"]["count"] - inside) <= 1, (regions["step"], inside)
    # steps: the intervals between the marks heatline saw, all inside the window
    steps = profile["steps"]
    assert 2 <= steps["count"] <= inside, (steps, inside)
    # wall time: never more than the attached window
    assert regions["step"]["wall_s"] <= profile["elapsed_s"] + 0.01
    # each of heatline's steps is one of the program's: the durations match a run of the
    # program's own consecutive marks (the program's clock: time.time, the profile's start
    # time: started_at_epoch)
    theirs = [b - a for a, b in zip(marks, marks[1:])]
    ours_all = steps["durations_s"]
    # the program's step that heatline's first is: the run of the program's steps that its
    # durations match best (the first mark heatline saw is at its started_s[0])
    first = min(range(len(theirs) - len(ours_all) + 1),
                key=lambda k: sum(abs(a - b) for a, b in zip(ours_all, theirs[k:])))
    assert abs(marks[first] - (start + steps["started_s"][0])) < 0.5
    for ours, true in zip(ours_all, theirs[first:]):
        assert ours == pytest.approx(true, abs=0.005, rel=0.1)
