"""heatline dump's parts that need no target: the per-version layout table held against this
CPython's own headers (the suite run on each version checks each table), the messages for a
refusal, and the text and JSON made of a dump."""

import errno
import os
import subprocess
import sys

import pytest

from heatline import _native
from heatline.renderers import dump_text
from heatline.engine import dump as reader


def test_the_layout_table_of_this_version_matches_its_headers():
    """compat.c's table for this minor version (and, on 3.13, this process's own
    _Py_DebugOffsets applied over it) holds exactly the offsets of the headers heatline was built
    with: the table heatline dump uses for a target of this version is right."""
    assert _native._remote_layout_check() is None


def test_this_process_reads_itself():
    result = reader.read(__import__("os").getpid(), pause=True)  # a process cannot stop itself
    assert not result.paused and result.pause_note == "a process cannot stop itself"
    assert result.version.startswith("%d.%d" % sys.version_info[:2])
    [me] = [t for t in result.threads if t.python and any(
        f.name == "test_this_process_reads_itself" for f in t.frames)]
    assert me.frames[0].name == "read" and me.frames[0].file.endswith("dump.py")
    assert me.complete and not me.holds_gil  # the read runs with the GIL released


def test_the_switch_interval_is_read_and_set_from_outside():
    """hl_remote_switch_interval on this process (its main interpreter's GIL, found as heatline
    attach finds a target's): it reads what sys.setswitchinterval set, writes what the attach
    asks, and leaves alone a value other than the one it expects (the program's own, set
    meanwhile)."""
    pid, before = os.getpid(), sys.getswitchinterval()
    try:
        sys.setswitchinterval(0.0042)
        assert _native.switch_interval(pid, 0, 0) == 4200  # read only
        assert _native.switch_interval(pid, 100, 0) == 4200
        assert sys.getswitchinterval() == pytest.approx(100e-6)
        assert _native.switch_interval(pid, 4200, 777) == 100  # not 777: left as it is
        assert sys.getswitchinterval() == pytest.approx(100e-6)
        assert _native.switch_interval(pid, 4200, 100) == 100
        assert sys.getswitchinterval() == pytest.approx(0.0042)
    finally:
        sys.setswitchinterval(before)
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    assert _native.switch_interval(int(gone.stdout), 100, 0) is None  # exited (and reaped)


def _message(os_error=errno.EPERM, **facts):
    defaults = {"yama": None, "target_uid": 1000, "uid": 1000, "can_ptrace": False}
    defaults.update(facts)
    return reader.refusal_message(4242, os_error, **defaults)


def test_refusal_by_yama_scope_1_names_the_ways_out():
    message = _message(yama=1)
    assert message.startswith("not allowed to read process 4242 (Operation not permitted): "
                              "Yama's ptrace_scope is 1 (/proc/sys/kernel/yama/ptrace_scope)")
    for way in ("sudo", "CAP_SYS_PTRACE", "--cap-add SYS_PTRACE",
                "prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY)", "kernel.yama.ptrace_scope=0"):
        assert way in message


def test_refusal_by_yama_scope_2_and_3():
    assert "ptrace_scope is 2" in _message(yama=2) and "CAP_SYS_PTRACE" in _message(yama=2)
    assert "ptrace_scope is 3" in _message(yama=3) and "reboot" in _message(yama=3)
    assert "ptrace_scope is 3" in _message(yama=3, can_ptrace=True)  # nobody may


def test_refusal_of_another_users_process():
    message = _message(target_uid=0, uid=1000)
    assert "it runs as user 0 and heatline as user 1000; run heatline dump as user 0" in message
    assert "sudo" in message
    root_without = _message(target_uid=1000, uid=0)  # root in a container without the capability
    assert "give heatline CAP_SYS_PTRACE, which it runs without" in root_without
    assert "--cap-add SYS_PTRACE" in root_without


def test_refusal_of_the_same_users_process_without_yama():
    assert "privileges heatline lacks" in _message()
    assert "seccomp" in _message(can_ptrace=True)  # refused with the capability: a filter


def test_no_process_vm_readv_at_all():
    assert "no process_vm_readv" in _message(os_error=errno.ENOSYS)


def test_every_message_is_one_line():
    for yama in (None, 0, 1, 2, 3):
        for target_uid in (0, 1000):
            for can in (False, True):
                assert "\n" not in _message(yama=yama, target_uid=target_uid, can_ptrace=can)


def test_versions_as_shown():
    assert reader.version_text(0x030B07F0, True) == "3.11.7"
    assert reader.version_text(0x030D00C1, True) == "3.13.0rc1"
    assert reader.version_text(0x030900A0, False) == "3.9"


def _sample():
    frame = reader.Frame("/app/x.py", "run", "Job.run", 12)
    threads = [
        reader.Thread(native_id=10, name="python3", kernel_state="S", syscall="futex",
                      python=True, thread_id=1, interpreter=0, main=True, frames=[frame]),
        reader.Thread(native_id=11, name="loader", kernel_state="R", python=True, thread_id=2,
                      interpreter=0, holds_gil=True, complete=False, truncated=True,
                      frames=[frame]),
        reader.Thread(native_id=12, name="python3", kernel_state="S", syscall="epoll_wait"),
        reader.Thread(native_id=13, name="python3", kernel_state="D", python=True, thread_id=3,
                      interpreter=0),
    ]
    return reader.Dump(pid=10, command=["python3", "x.py"], version="3.11.7",
                       binary="/usr/lib/libpython3.11.so", paused=True, pause_note="",
                       pause_s=0.0004, read_s=0.0002, threads_complete=False, threads=threads)


def test_the_text():
    text = dump_text.as_text(_sample())
    assert text == (
        "Process 10: python3 x.py\n"
        "Python 3.11.7 (/usr/lib/libpython3.11.so)\n"
        "Threads stopped for 0.40 ms while read (0.20 ms reading); stacks innermost first.\n"
        "Some threads may be missing: the thread list changed while read.\n"
        "\n"
        "Thread 10 (main thread): idle in futex\n"
        "    Job.run (/app/x.py:12)\n"
        "\n"
        'Thread 11 ("loader"): holds the GIL, running\n'
        "    Job.run (/app/x.py:12)\n"
        "    (deeper frames left out)\n"
        "    (torn: the thread moved while its stack was read; the frames above were read "
        "before)\n"
        "\n"
        "Thread 12 (no Python): idle in epoll_wait\n"
        "\n"
        "Thread 13: idle\n"
        "    (no Python code running)\n"
    )


def test_the_text_shows_control_characters_as_escapes():
    dump = _sample()
    dump.threads[0].frames = [reader.Frame("/app/\x1b[2Jx.py", "f", "f", 1)]
    assert "\x1b" not in dump_text.as_text(dump) and "\\x1b[2Jx.py" in dump_text.as_text(dump)


def test_the_json():
    data = dump_text.as_json(_sample())
    assert data["format"] == "heatline-dump" and data["pause_ms"] == 0.4
    assert data["pause_note"] is None and data["threads_complete"] is False
    main, loader, native, idle = data["threads"]
    assert main["frames"] == [{"function": "Job.run", "name": "run", "file": "/app/x.py",
                               "line": 12}]
    assert (main["state"], main["syscall"], main["main"]) == ("idle", "futex", True)
    assert loader["holds_gil"] and not loader["stack_complete"] and loader["stack_truncated"]
    assert native["python"] is False and native["thread_id"] is None and native["frames"] == []
    assert idle["state"] == "idle" and idle["syscall"] is None


def test_python_names_and_locals():
    """threading's name before the kernel's; locals under their frame (text) and in it (JSON),
    absent where they were not read."""
    dump = _sample()
    dump.threads[1].python_name = "worker-one"  # the kernel calls it "loader"
    dump.threads[0].frames = [reader.Frame("/app/x.py", "run", "Job.run", 12,
                                           locals=(("label", "'hi'"), ("items", "<list of 3>")))]
    text = dump_text.as_text(dump)
    assert ("Thread 10 (main thread): idle in futex\n"
            "    Job.run (/app/x.py:12)\n"
            "        label = 'hi'\n"
            "        items = <list of 3>\n") in text
    assert 'Thread 11 ("worker-one"): holds the GIL' in text and "loader" not in text
    main, loader, _, _ = dump_text.as_json(dump)["threads"]
    assert main["python_name"] is None and main["frames"][0]["locals"] == [
        {"name": "label", "value": "'hi'"}, {"name": "items", "value": "<list of 3>"}]
    assert (loader["python_name"], loader["name"]) == ("worker-one", "loader")
    assert "locals" not in loader["frames"][0]


@pytest.mark.parametrize("number, name", [(202, "futex"), (230, "clock_nanosleep"), (7, "poll")])
def test_system_call_names(number, name):
    assert reader.syscall_name(number, "x86_64") == name
    assert reader.syscall_name(999, "x86_64") == "system call 999"
    assert reader.syscall_name(number, "aarch64") == f"system call {number}"
