"""With memory profiling on (the default), programs that fork, use multiprocessing, start
threads or exec keep working: the same stdout, stderr and exit status as under plain python.

The helper programs (tests/targets/mem_*.py) allocate Python objects and numpy
arrays around each of these events, in several threads at once where it matters: a fork while
another thread is inside an allocator is where a profiler's locks deadlock the child.
"""

import os
import re

import pytest

from heatline import data as profile

pytest.importorskip("numpy")
needs_fork = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
TIMEOUT = 180  # a deadlock fails the test instead of hanging it


def _same_as_python(run_heatline, run_python, program, *args, options=()):
    plain = run_python(program(args[0]), *args[1:], timeout=TIMEOUT)
    profiled = run_heatline("-q", *options, program(args[0]), *args[1:], timeout=TIMEOUT)
    assert profiled.returncode == plain.returncode, profiled.stderr.decode(errors="replace")
    assert profiled.stdout == plain.stdout
    # 3.12+ warns about fork() in a threaded process naming the process id, which differs
    # between any two runs: the pid is the one part compared loosely.
    pid = re.compile(rb"\(pid=\d+\)")
    assert pid.sub(b"(pid=N)", profiled.stderr) == pid.sub(b"(pid=N)", plain.stderr)
    return profiled


@needs_fork
def test_fork_while_another_thread_allocates(run_heatline, run_python, program):
    result = _same_as_python(run_heatline, run_python, program, "mem_fork.py")
    lines = result.stdout.decode().splitlines()
    assert lines[-1] == "parent done"
    assert sum(line.startswith("child ") for line in lines) == 12


@needs_fork
def test_single_threaded_fork_warns_nothing(run_heatline, run_python, program):
    # Python 3.12+ counts the process's OS threads (/proc/self/stat) before fork() and warns
    # (DeprecationWarning, shown for __main__) when there is more than one.
    result = _same_as_python(run_heatline, run_python, program, "mem_fork_single.py")
    assert result.stdout.decode().splitlines() == ["child 1000", "parent 100000"]


@needs_fork
@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
def test_multiprocessing(run_heatline, run_python, program, method):
    result = _same_as_python(run_heatline, run_python, program, "mem_multiprocessing.py", method)
    assert result.stdout.decode().splitlines()[-1] == "exitcode: 0 1000000"


def test_many_threads_allocating(run_heatline, run_python, program):
    result = _same_as_python(run_heatline, run_python, program, "mem_threads.py")
    assert result.stdout.decode().startswith("32 ")


@pytest.mark.skipif(not hasattr(os, "execv"), reason="needs exec")
@pytest.mark.parametrize("mode", ["execv", "execve", "thread", "numpy", "subprocess"])
def test_exec_and_subprocess(run_heatline, run_python, program, mode):
    result = _same_as_python(run_heatline, run_python, program, "mem_exec.py", mode)
    assert result.stdout.decode().startswith("before exec")


@needs_fork
def test_fork_with_a_tiny_sampling_window(run_heatline, run_python, program):
    # Every allocation recorded: the slow path (engine lock, stack walk) runs all the time,
    # so forks land inside it.
    _same_as_python(
        run_heatline, run_python, program, "mem_fork.py",
        options=("--memory-sampling-window", "64"),
    )


def test_cpu_only_runs_the_same(run_heatline, run_python, program):
    _same_as_python(run_heatline, run_python, program, "mem_threads.py", options=("--cpu-only",))


@pytest.mark.parametrize("value", ["0", "-5", "lots"])
def test_bad_memory_sampling_window_is_one_line_error(run_heatline, program, value):
    result = run_heatline("--memory-sampling-window", value, program("mem_threads.py"))
    assert result.returncode == 2
    lines = result.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith("heatline: error:"), lines
    assert result.stdout == b""


@needs_fork
def test_profile_of_a_forking_program_is_the_parents(run_heatline, program, tmp_path):
    # Children that exit through sys.exit run atexit handlers too: the profile written must
    # still be the parent's, whole, with the allocating thread's memory in it.
    profile_path = tmp_path / "profile.json"
    result = run_heatline("-q", "-o", str(profile_path), program("mem_fork.py"), timeout=TIMEOUT)
    assert result.returncode == 0, result.stderr
    loaded = profile.load(str(profile_path))
    assert loaded["memory"]["enabled"] is True
    functions = {f["qualname"]: f for f in loaded["files"][program("mem_fork.py")]["functions"]}
    assert functions["churn"]["alloc_python_bytes"] + functions["churn"]["alloc_native_bytes"] > 0
    assert loaded["peak_bytes"] > 0
