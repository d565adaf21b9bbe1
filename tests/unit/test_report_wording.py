"""The terminal report's wording, each word carrying information: plurals, files
listed for memory alone, the unattributed time explained, leaks biggest first, the Processes
table's CPU column against its sampled columns."""

import copy
import io

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
    text = " ".join(_text(terminal._process_table(busy), width=200).split())
    assert ("Py s + nat s above CPU s: threads ready to run but waiting for a CPU (more runnable "
            "threads than cores) count as running; CPU s is only time on a CPU") in text, text


