"""`heatline dump PID` names a deadlock in one line at the top, against targets whose locks are
known (tests/targets/dump_lock_*.py, dump_rlock_cycle.py, dump_condition_hang.py): two
threading.Lock taken in opposite orders in with blocks (no owner recorded: each holder found by
the with block in its frames), an RLock and a Condition (owners recorded by the locks), two
locks taken by acquire() calls (holders nobody records: said so), a Condition's wait for a
notify that a thread waiting for a lock would send while the main thread joins (every thread
waits), and a process whose threads wait on a queue, a socket, a lock held by a sleeping thread,
and sleep, where nothing is said. Each target runs on this test's CPython and on every other
3.9-3.13 installed (PYENV_VERSIONS), since the frames and locks are read with each version's
layout.

The targets let any process of their user read them (prctl PR_SET_PTRACER_ANY), as in
test_dump.py.
"""

import json
import os
import subprocess
import sys
import time

import pytest
from _tools import installed_pythons, source_line

TARGETS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "targets")
LOCKS = os.path.join(TARGETS, "dump_lock_cycle.py")
RLOCKS = os.path.join(TARGETS, "dump_rlock_cycle.py")
QUIET = os.path.join(TARGETS, "dump_lock_quiet.py")
UNNAMED = os.path.join(TARGETS, "dump_lock_unnamed.py")
HANG = os.path.join(TARGETS, "dump_condition_hang.py")

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")


def _pythons():
    # From 3.14 the lock objects' layout is not known to the reader: dump looks for no deadlock
    # there (docs/design-live.md, "heatline dump").
    unread = pytest.mark.skip(reason="dump reads no lock objects of CPython 3.14+")
    return [pytest.param(version, path, id=version,
                         marks=[unread] if tuple(map(int, version.split("."))) >= (3, 14) else [])
            for version, path in installed_pythons().items()]






@pytest.fixture
def start(tmp_path):
    """start(target, python): the target running once it wrote its ready file (its words
    returned too); killed after the test."""
    started = []

    def run(target, python):
        ready = str(tmp_path / f"ready-{len(started)}")
        process = subprocess.Popen([python, target, ready, "ptracer"],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        started.append(process)
        deadline = time.monotonic() + 60
        while not os.path.exists(ready):
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, f"{ready} never appeared"
            time.sleep(0.01)
        with open(ready, encoding="utf-8") as file:
            return process, file.read().split()

    yield run
    for process in started:
        process.kill()
        process.communicate()


def _dump(pid, *options):
    done = subprocess.run([sys.executable, "-m", "heatline", "dump", *options, str(pid)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 0, done.stderr
    return done.stdout


def _deadlock(pid, timeout=60):
    """The first JSON dump naming a deadlock (the threads block a moment after the ready file;
    a deadlock, once there, stays), or the last one read."""
    deadline = time.monotonic() + timeout
    while True:
        dump = json.loads(_dump(pid, "--json"))
        if dump["deadlock"] is not None or time.monotonic() > deadline:
            return dump
        time.sleep(0.05)


def _waits(dump):
    return {w["thread"]: w for w in dump["deadlock"]["waits"]}


@pytest.mark.parametrize("version, python", _pythons())
def test_two_locks_deadlock_is_named_with_both_waiting_lines(start, version, python):
    _, (pid, jobs, journal) = start(LOCKS, python)
    dump = _deadlock(pid)
    assert dump["deadlock"] is not None, dump
    loader_waits = source_line(LOCKS, "# loader waits here")
    writer_waits = source_line(LOCKS, "# writer waits here")
    waits = _waits(dump)
    assert set(waits) == {"loader", "writer"}, dump["deadlock"]
    assert dump["deadlock"]["cycle"] is True
    loader, writer = waits["loader"], waits["writer"]
    assert (loader["line"], loader["lock"], loader["lock_type"]) == (
        loader_waits, int(journal), "_thread.lock")
    assert (writer["line"], writer["lock"], writer["lock_type"]) == (
        writer_waits, int(jobs), "_thread.lock")
    # No owner recorded: each holder is the other thread, found by its with block.
    assert (loader["holder"], loader["held_by"], loader["held_at"]["line"]) == (
        "writer", "with", writer_waits)
    assert (writer["holder"], writer["held_by"], writer["held_at"]["line"]) == (
        "loader", "with", loader_waits)

    text = _dump(pid).splitlines()[0]
    name = os.path.basename(LOCKS)
    assert text.startswith(f"deadlock: loader waits at {name}:{loader_waits} for lock "
                           f"{int(journal):#x} held by writer") or text.startswith(
        f"deadlock: writer waits at {name}:{writer_waits} for lock {int(jobs):#x} held by "
        "loader"), text
    assert f"which waits at {name}:" in text, text


@pytest.mark.parametrize("version, python", _pythons())
def test_rlock_deadlock_names_the_holders_the_locks_record(start, version, python):
    _, (pid, journal, ready) = start(RLOCKS, python)
    dump = _deadlock(pid)
    assert dump["deadlock"] is not None, dump
    waits = _waits(dump)
    assert set(waits) == {"loader", "writer"}, dump["deadlock"]
    loader, writer = waits["loader"], waits["writer"]
    # loader waits inside Condition.__enter__ (threading.py): the line shown is its caller's.
    assert (loader["line"], loader["lock"], loader["lock_type"]) == (
        source_line(RLOCKS, "# loader waits here"), int(ready), "_thread.RLock")
    assert (writer["line"], writer["lock"], writer["lock_type"]) == (
        source_line(RLOCKS, "# writer waits here"), int(journal), "_thread.RLock")
    assert (loader["holder"], loader["held_by"]) == ("writer", "owner")
    assert (writer["holder"], writer["held_by"]) == ("loader", "owner")
    text = _dump(pid).splitlines()[0]
    assert text.startswith("deadlock: ") and "held by writer" in text and (
        "held by loader" in text), text


@pytest.mark.parametrize("version, python", _pythons())
def test_holders_nothing_shows_are_said_to_be_unknown(start, version, python):
    _, (pid, jobs, journal) = start(UNNAMED, python)
    dump = _deadlock(pid)
    assert dump["deadlock"] is not None, dump
    assert dump["deadlock"]["cycle"] is False
    waits = _waits(dump)
    assert {name: (w["line"], w["lock"], w["holder"], w["held_by"])
            for name, w in waits.items()} == {
        "MainThread": (source_line(UNNAMED, "# main waits here"), int(jobs), None, None),
        "loader": (source_line(UNNAMED, "# loader waits here"), int(journal), None, None),
        "writer": (source_line(UNNAMED, "# writer waits here"), int(jobs), None, None),
    }
    text = _dump(pid).splitlines()[0]
    name = os.path.basename(UNNAMED)
    assert text.startswith("deadlock: every thread waits, none can go on: "), text
    assert (f"loader waits at {name}:{source_line(UNNAMED, '# loader waits here')} for lock "
            f"{int(journal):#x} held by a thread heatline cannot name") in text, text


@pytest.mark.parametrize("version, python", _pythons())
def test_a_notify_that_cannot_come_while_every_thread_waits(start, version, python):
    _, (pid, table) = start(HANG, python)
    dump = _deadlock(pid)
    assert dump["deadlock"] is not None, dump
    assert dump["deadlock"]["cycle"] is False
    waits = _waits(dump)
    assert {name: (w["line"], w["holder"], w["held_by"]) for name, w in waits.items()} == {
        "MainThread": (source_line(HANG, "# main waits here"), None, None),
        "sleeper": (source_line(HANG, "# sleeper waits here"), None, None),
        "notifier": (source_line(HANG, "# notifier waits here"), "sleeper", "with"),
    }
    assert waits["notifier"]["lock"] == int(table)
    assert [waits[name]["waits_for"] for name in ("MainThread", "sleeper", "notifier")] == [
        "join", "notify", "lock"]
    name = os.path.basename(HANG)
    main, sleeper, notifier = (source_line(HANG, f"# {who} waits here")
                               for who in ("main", "sleeper", "notifier"))
    text = _dump(pid).splitlines()[0]
    assert text == (
        "deadlock: every thread waits, none can go on: "
        f"MainThread waits at {name}:{main} for a thread to end (in "
        f"a join); sleeper waits at {name}:{sleeper} for a notify "
        f"(in a Condition's wait); notifier waits at {name}:{notifier}"
        f" for lock {int(table):#x} held by sleeper (in a with block of sleep_on_it(), at "
        f"{name}:{sleeper})"), text


@pytest.mark.parametrize("version, python", _pythons())
def test_waits_that_are_no_cycle_say_nothing(start, version, python):
    _, (pid,) = start(QUIET, python)
    wanted = {"consume": "get", "read": "read", "wait_for_table": "wait_for_table",
              "keep_table": "keep_table", "produce": "produce"}
    deadline = time.monotonic() + 60
    while True:
        dump = json.loads(_dump(pid, "--json"))
        places = {}
        for thread in dump["threads"]:
            names = [frame["name"] for frame in thread["frames"]]
            for outer, inner in wanted.items():
                if outer in names and inner in names and thread["state"] == "idle":
                    places[outer] = thread
        if len(places) == len(wanted) or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert set(places) == set(wanted), dump
    # The thread waiting for the table waits in futex on the lock a sleeping thread holds.
    assert places["wait_for_table"]["syscall"] in ("futex", "system call 98"), places
    assert dump["deadlock"] is None, dump["deadlock"]
    assert not _dump(pid).startswith("deadlock"), _dump(pid)
