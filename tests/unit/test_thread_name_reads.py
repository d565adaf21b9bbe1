"""engine/threadnames.py: the names of the program's threads, read in the program (no engine
here: the reads are called directly, as the engine's pending call and the session do)."""

import _thread
import sys
import threading

import pytest

from heatline.engine.threadnames import ThreadNames

# Nothing checked here depends on the CPython version beyond threading's own tables, which are
# the same from 3.9 on: runs on the main CPython and under ASan, not on every version.
pytestmark = pytest.mark.interpreter_independent


def _names(reader):
    return dict(reader.names())


def test_running_threads_by_name_renames_seen_and_made_up_names_left_out():
    stop = threading.Event()
    worker = threading.Thread(target=stop.wait, name="loader")
    worker.start()
    dummy_id = []
    started = threading.Event()

    def raw():  # threading makes up a _DummyThread ("Dummy-1") for it: no name of the program's
        threading.current_thread()
        dummy_id.append(threading.get_native_id())
        started.set()
        stop.wait()

    _thread.start_new_thread(raw, ())
    started.wait()
    try:
        reader = ThreadNames()
        assert reader.read() is False  # nothing starting
        names = _names(reader)
        assert names[worker.native_id] == "loader"
        assert names[threading.main_thread().native_id] == "MainThread"
        assert dummy_id[0] not in names
        worker.name = "writer"
        reader.read()
        assert _names(reader)[worker.native_id] == "writer"  # the last name read
    finally:
        stop.set()
        worker.join()


def test_at_the_end_ended_threads_the_program_keeps_and_kernel_names():
    worker = threading.Thread(target=lambda: None, name="brief")
    worker.start()
    worker.join()
    reader = ThreadNames()
    reader.read()
    assert worker.native_id not in _names(reader)  # ended: not among the running
    reader.read_all()
    names = _names(reader)
    assert names[worker.native_id] == "brief"  # its object still exists (threading._dangling)
    with open(f"/proc/self/task/{threading.get_native_id()}/comm") as f:
        comm = f.read().strip()
    assert comm  # every live thread has the kernel's name, though threading's wins
    assert names[threading.get_native_id()] == threading.current_thread().name


def test_the_programs_threading_is_remembered_when_sys_modules_is_heatlines(monkeypatch):
    """At the end of a run heatline's own modules are in sys.modules (run/isolation.py): the
    threading module a read found while the program ran is the one read then."""
    worker = threading.Thread(target=lambda: None, name="kept")
    reader = ThreadNames()
    reader.read()
    worker.start()
    worker.join()
    monkeypatch.delitem(sys.modules, "threading")
    reader.read_all()
    assert _names(reader)[worker.native_id] == "kept"
