"""The terminal report's wording, each word carrying information: plurals, files
listed for memory alone, the unattributed time explained, leaks biggest first, the Processes
table's CPU column against its sampled columns."""

import copy
import io
import re

import pytest
from rich.console import Console

from heatline.renderers import terminal
from test_profile import build, snapshot

# Nothing checked here depends on the CPython version: runs on the main CPython and under ASan,
# not on every version (Makefile, suite-3.X).
pytestmark = pytest.mark.interpreter_independent


def _text(renderable, width=120):
    out = io.StringIO()
    Console(file=out, width=width, color_system=None).print(renderable)
    return out.getvalue()


def test_one_sample_is_singular_and_unattributed_time_is_explained():
    snap = snapshot(samples=1)
    footer = terminal._footer(build(snap))
    assert "1 sample 10 ms apart" in footer, footer
    # 10 ms of the threads' time (7 + 3) had no user line: the footer says what that is.
    assert ("0.010 s of thread time in no line of yours (library threads, interpreter start-up "
            "and exit; --profile-all shows where)") in footer, footer
    assert "2 samples" in terminal._footer(build(snapshot(samples=2)))


def test_a_file_with_no_time_says_so_instead_of_an_empty_share():
    profile = build()
    entry = copy.deepcopy(profile["files"]["/src/app.py"])
    for kind in ("python", "native", "system"):
        entry[kind + "_pct"] = 0.0  # listed for its memory alone (as under --profile-all)
    header = terminal._file_header("/src/app.py", entry).plain
    assert header == "/src/app.py  no time sampled", header
    entry["native_pct"] = 0.001  # a share that rounds to nothing is still not nothing
    header = terminal._file_header("/src/app.py", entry).plain
    assert header == "/src/app.py  <0.1% of the time (native <0.1%)", header


def test_leaks_are_listed_biggest_first_whatever_their_likelihood():
    profile = build()
    lines = profile["files"]["/src/app.py"]["lines"]
    small, big = lines[0], lines[1]
    small.update(growth_bytes=512 * 1024, leak={"likelihood": 0.99, "growth_bytes_per_s": 1.0})
    big.update(growth_bytes=337 * 2**20, leak={"likelihood": 0.6, "growth_bytes_per_s": 1.0})
    order = [line["line"] for _, line in terminal._leaks(profile)]
    assert order == [big["line"], small["line"]]
    from heatline.api import Profile

    assert [leak.line for leak in Profile(profile).leaks()] == [big["line"], small["line"]]


def _process(pid, cpu_s, python_s, native_s):
    return {"pid": pid, "ppid": 1, "role": "main", "argv": ["app.py"], "exit": "0",
            "cpu_s": cpu_s, "python_s": python_s, "native_s": native_s, "system_s": 0.0,
            "peak_bytes": 0}


def test_processes_table_explains_sampled_time_above_cpu_time():
    fits = [_process(10, 1.0, 0.6, 0.4), _process(11, 2.0, 1.5, 0.4)]
    assert "waiting for a CPU" not in _text(terminal._process_table(fits))
    busy = [_process(10, 1.0, 0.9, 0.4), _process(11, 2.0, 1.5, 0.4)]  # 1.3 s sampled > 1.0
    text = " ".join(_text(terminal._process_table(busy, 200), width=200).split())
    assert ("Py s + nat s above CPU s: threads ready to run but waiting for a CPU (more runnable "
            "threads than cores) count as running; CPU s is only time on a CPU") in text, text




_CAPTION = ("Py s + nat s above CPU s: threads ready to run but waiting for a CPU (more runnable "
            "threads than cores) count as running; CPU s is only time on a CPU")


def _process_rows(text, processes):
    """The table's row of each process: the line starting with its PID."""
    lines = text.splitlines()
    return [next(line for line in lines if line.split()[:1] == [str(p["pid"])])
            for p in processes]


@pytest.mark.parametrize("width", [60, 80, 100, 200])
def test_processes_table_keeps_pid_and_exit_whole_and_shortens_the_command(width):
    long_arguments = [f"--option-number-{i}=/a/rather/long/path/to/input/file_{i}.dat"
                      for i in range(6)]
    processes = [_process(4194301, 1.0, 0.9, 0.4)]  # busy: the caption is shown
    processes[0].update(exit="exit 0",
                        argv=["/home/someone/projects/pipeline/run_the_whole_pipeline.py"])
    for pid, exit in ((4194302, "exit 0"), (4194303, "os._exit(0)"), (4194304, "SIGTERM")):
        child = _process(pid, 0.5, 0.3, 0.1)
        child.update(ppid=4194301, role="python subprocess", exit=exit,
                     argv=["/home/someone/projects/pipeline/stage.py", "child", *long_arguments])
        processes.append(child)
    text = _text(terminal._process_table(processes, width), width=width)
    assert max(map(len, text.splitlines())) <= width, text
    for process, row in zip(processes, _process_rows(text, processes)):
        # Whole, a cell of its own (cells are at least two spaces apart).
        assert re.search(rf"  {re.escape(process['exit'])}  ", row), (width, row)
        command = row.rstrip().rsplit("   ", 1)[-1].strip()
        whole = " ".join(process["argv"])
        # Shortened: the program's directory left out, then the middle cut (start and end kept).
        short = " ".join([process["argv"][0].rsplit("/", 1)[-1], *process["argv"][1:]])
        if command not in (whole, short):
            start, end = command.split("…")
            assert short.startswith(start) and short.endswith(end), (width, command)
    # The caption, about the columns it names (shown when they are), wraps at spaces: every
    # word of it whole, in order.
    header = text.splitlines()[1]
    if width >= 100:
        assert "Py s" in header and "nat s" in header, header
    if "Py s" in header and "nat s" in header:
        caption = text[text.index("Py s + nat s"):]
        assert caption.split() == _CAPTION.split(), (width, caption)
    else:
        assert "Py s + nat s" not in text


def test_processes_table_keeps_a_short_command_whole_and_every_column_when_wide():
    processes = [_process(10, 1.0, 0.6, 0.4), _process(11, 2.0, 1.5, 0.4)]
    processes[1].update(exit="os._exit(0)", argv=["worker.py", "--fast"])
    text = _text(terminal._process_table(processes, 200), width=200)
    header = text.splitlines()[1].split()
    assert header == ["PID", "ppid", "role", "CPU", "s", "Py", "s", "nat", "s", "sys", "s",
                      "peak", "MiB", "exit", "command", "line"], header
    assert "worker.py --fast" in _process_rows(text, processes)[1]
