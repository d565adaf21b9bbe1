"""data/tasks.py's tasks known by the function they ran (Dask): a worker's table from its
stacks and task records, the sum over workers, the terminal report's Tasks section
(renderers/labels_terminal.py), and what heatline.dask imports."""

import io
import subprocess
import sys
import types

from rich.console import Console

from heatline.data.tasks import summed, task_record, worker_tasks
from heatline.renderers import labels_terminal

JOB = "/job.py"


def _code(name, first_line, file=JOB):
    return types.SimpleNamespace(co_filename=file, co_qualname=name, co_name=name,
                                 co_firstlineno=first_line)


def _line(number, alloc=0):
    return {"line": number, "alloc_python_bytes": alloc, "alloc_native_bytes": 0}


def _profile():
    frames = [
        {"file": "/lib/worker.py", "name": "run", "qualname": "run", "line": 10},
        {"file": JOB, "name": "load", "qualname": "load", "line": 3},
        {"file": JOB, "name": "inc", "qualname": "inc", "line": 8},
        {"file": JOB, "name": "inc", "qualname": "inc", "line": 9},
        {"file": JOB, "name": "<listcomp>", "qualname": "load.<locals>.<listcomp>", "line": 4},
    ]
    entry = {"thread": 0, "native_s": 0.0, "system_s": 0.0, "cpu_wait_s": 0.0}
    return {
        "stacks": {"frames": frames, "dropped_s": 0.0, "entries": [
            dict(entry, stack=[0, 1], python_s=1.0),           # load's own line
            dict(entry, stack=[0, 1, 4], python_s=0.5),        # its comprehension
            dict(entry, stack=[0, 2], python_s=0.6),           # inc
            dict(entry, stack=[0, 3], python_s=0.2, system_s=0.2),
            dict(entry, stack=[0], python_s=3.0),               # no task running
        ]},
        "files": {JOB: {
            "lines": [_line(3, 1000), _line(4, 24), _line(8), _line(9), _line(20, 5)],
            "functions": [{"qualname": "load", "first_line": 2},
                          {"qualname": "load.<locals>.<listcomp>", "first_line": 4},
                          {"qualname": "inc", "first_line": 7}]}},
    }


def _records():
    load, inc = _code("load", 2), _code("inc", 7)
    return [task_record("load", 1.5, load),
            # two names ran inc: its time is shared by their wall time (3:1)
            task_record("inc", 0.3, inc), task_record("inc", 0.3, inc),
            task_record("inc-again", 0.2, inc),
            task_record("alias", 0.0, None)]


def test_a_workers_tasks_are_found_in_its_stacks_by_their_function():
    rows = {row["name"]: row for row in worker_tasks(_profile(), _records())}
    assert list(rows) == ["load", "inc", "inc-again", "alias"]  # the longest wall first
    load = rows["load"]
    assert (load["count"], load["wall_s"], load["python_s"]) == (1, 1.5, 1.5)
    assert load["alloc_bytes"] == 1024  # its lines and its comprehension's, not line 20
    assert load["lines"] == [{"file": JOB, "line": 3, "time_s": 1.0},
                             {"file": JOB, "line": 4, "time_s": 0.5}]
    inc, again = rows["inc"], rows["inc-again"]
    assert inc["count"] == 2
    assert abs(inc["python_s"] - 0.8 * 0.75) < 1e-6 and abs(again["python_s"] - 0.2) < 1e-6
    assert abs(inc["system_s"] - 0.15) < 1e-6
    assert [line["line"] for line in inc["lines"]] == [8, 9]
    assert rows["alias"]["python_s"] == 0.0 and rows["alias"]["lines"] == []


def test_code_sent_by_value_is_found_by_its_name_and_first_line():
    record = task_record("load", 1.5, _code("load", 2, file="<dynamic-code>"))
    (row,) = worker_tasks(_profile(), [record])
    assert row["python_s"] == 1.5


def test_the_workers_tables_are_summed_by_name():
    one = worker_tasks(_profile(), _records())
    two = worker_tasks(_profile(), _records()[:1])
    rows = {row["name"]: row for row in summed([one, two])}
    load = rows["load"]
    assert (load["count"], load["wall_s"], load["python_s"]) == (2, 3.0, 3.0)
    assert load["alloc_bytes"] == 2048
    assert load["lines"][0] == {"file": JOB, "line": 3, "time_s": 2.0}
    assert rows["inc"]["count"] == 2


def test_the_terminal_report_shows_the_tasks_when_present():
    out = io.StringIO()
    console = Console(file=out, width=80, force_terminal=False)
    labels_terminal.render(console, {"elapsed_s": 1.0})
    assert out.getvalue() == ""
    labels_terminal.render(console, {"elapsed_s": 1.0,
                                     "tasks": summed([worker_tasks(_profile(), _records())])})
    text = out.getvalue()
    assert "Tasks" in text and "job.py:3" in text
    lines = text.splitlines()
    assert any(line.startswith("load") and " 1 " in line for line in lines), text
    assert all(len(line) <= 80 for line in lines)


def test_the_client_sends_its_notebook_cells_sources_latest_first(monkeypatch):
    import linecache

    from heatline.integrations.dask import _client_sources

    monkeypatch.setattr(linecache, "cache", {
        "/tmp/ipykernel_1/1.py": (9, None, ["def f():\n", "    pass\n"], "/tmp/ipykernel_1/1.py"),
        "/lib/module.py": (3, 1.0, ["x\n"], "/lib/module.py"),  # a file on disk
        "/tmp/ipykernel_1/2.py": (9, None, ["def g():\n"], "/tmp/ipykernel_1/2.py"),
        "<string>": (1, None, ["x\n"], "<string>"),
    })
    sources = _client_sources()
    cells = [path for path in sources if path.startswith("/tmp/ipykernel_1/")]
    assert cells == ["/tmp/ipykernel_1/2.py", "/tmp/ipykernel_1/1.py"]
    assert "/lib/module.py" not in sources and "<string>" not in sources


def test_heatline_dask_imports_no_dask_until_a_block_starts():
    code = ("import sys, heatline\n"
            "heatline.dask.profile_workers\n"
            "print(sorted(m for m in ('dask', 'distributed') if m in sys.modules))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=True)
    assert done.stdout.strip() == "[]"
