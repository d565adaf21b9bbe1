"""data/tasks.py: the `tasks` table from the engine's spans and the workers' sampled stacks,
checked against hand-built profiles whose numbers are known."""

from heatline.data.tasks import attributed, matches, tasks_table


def _frame(qualname, line, file="/job.py"):
    return {"file": file, "name": qualname.rpartition(".")[2], "qualname": qualname,
            "line": line}


def _profile(entries, frames, lines=()):
    """A profile with only what the table reads: stacks, and the files' lines."""
    files = {}
    for file, line, alloc in lines:
        files.setdefault(file, {"lines": []})["lines"].append(
            {"line": line, "alloc_python_bytes": alloc, "alloc_native_bytes": 1})
    return {"stacks": {"frames": frames, "entries": entries}, "files": files}


def _entry(stack, python_s=0.0, native_s=0.0, system_s=0.0, cpu_wait_s=0.0):
    return {"stack": stack, "thread": 0, "python_s": python_s, "native_s": native_s,
            "system_s": system_s, "cpu_wait_s": cpu_wait_s}


FRAMES = [
    _frame("main_loop", 5, file="/ray/worker.py"),   # 0: the engine's own frame
    _frame("work", 10),                              # 1: the task function
    _frame("helper", 20),                            # 2: a function it calls
    _frame("Counter.add", 30),                       # 3: an actor method
    {"file": "/lib/libc.so", "name": "memcpy", "qualname": "memcpy", "line": 0,
     "native": True},                                # 4: a native frame
    _frame("outer.<locals>.nested", 40),             # 5: a task defined in a function
]


def test_a_frame_matches_the_task_by_qualified_name_or_its_last_parts():
    assert matches("work", "work")
    assert matches("Counter.add", "Counter.add")
    assert matches("outer.<locals>.nested", "nested")
    assert not matches("rework", "work")
    assert not matches("Counter.add", "add_more")


def test_time_goes_to_the_outermost_task_frame_of_each_stack_and_its_innermost_line():
    profile = _profile([
        _entry([0, 1, 2], python_s=0.5),              # work -> helper
        _entry([0, 1, 2, 4], native_s=0.25),          # work -> helper -> memcpy
        _entry([0, 1], python_s=0.125, cpu_wait_s=0.5),
        _entry([0, 3], system_s=0.75),                # the actor's method
        _entry([0], python_s=9.0),                    # the engine's own loop: no task
    ], FRAMES)
    found = attributed(profile, ["work", "Counter.add"])
    assert found["work"]["python_s"] == 0.625 and found["work"]["native_s"] == 0.25
    assert found["work"]["lines"] == {("/job.py", 20): 0.75, ("/job.py", 10): 0.625}
    assert found["work"]["touched"] == {("/job.py", 10), ("/job.py", 20)}
    assert found["Counter.add"]["system_s"] == 0.75


def test_the_table_counts_rays_spans_and_sums_over_workers():
    one = _profile([_entry([0, 1, 2], python_s=1.0)], FRAMES,
                   lines=[("/job.py", 20, 100), ("/ray/worker.py", 5, 7)])
    two = _profile([_entry([0, 5], python_s=0.5), _entry([0, 1], native_s=0.5)], FRAMES,
                   lines=[("/job.py", 10, 50)])
    table = tasks_table([("work", 1.0), ("work", 2.0), ("nested", 0.75)], [one, two])
    assert [row["name"] for row in table] == ["work", "nested"]  # the longest wall first
    work, nested = table
    assert work["count"] == 2 and work["wall_s"] == 3.0
    assert (work["python_s"], work["native_s"], work["system_s"]) == (1.0, 0.5, 0.0)
    assert work["alloc_bytes"] == 101 + 51  # its lines' allocations, not the engine's line
    assert work["lines"] == [{"file": "/job.py", "line": 20, "time_s": 1.0},
                             {"file": "/job.py", "line": 10, "time_s": 0.5}]
    assert nested["count"] == 1 and nested["python_s"] == 0.5


def test_a_task_whose_stacks_were_not_sampled_has_its_count_and_no_time():
    table = tasks_table([("quick", 0.001)], [_profile([], FRAMES)])
    assert table == [{"name": "quick", "count": 1, "wall_s": 0.001, "python_s": 0.0,
                      "native_s": 0.0, "system_s": 0.0, "alloc_bytes": 0, "lines": []}]
