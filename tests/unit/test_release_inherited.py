"""data/build.py's release_inherited: a fork child's time in library code under the frames it
inherited from its parent leaves the parent's line and becomes the child's idle time; time
under a user frame of its own, and a fork the program called itself, stay as charged."""

from heatline.data.build import build_profile, release_inherited

FILES = [{"path": "/app/main.py", "user": True}, {"path": "/lib/pool.py", "user": False}]
FUNCTIONS = [
    {"file": 0, "name": "<module>", "qualname": "<module>", "first_line": 1},  # 0
    {"file": 1, "name": "start", "qualname": "start", "first_line": 10},  # 1: calls fork
    {"file": 1, "name": "wait", "qualname": "wait", "first_line": 20},  # 2: the worker loop
    {"file": 0, "name": "task", "qualname": "task", "first_line": 5},  # 3: the user's task
]
# Inherited: <module> at line 3 (`with Pool(...)`), start at line 11 (fork).
FORK_STACK = [("/app/main.py", "<module>", 3), ("/lib/pool.py", "start", 11)]
MS = 1_000_000


def _snapshot(fork_line=12):
    idle = ((0, 3), (1, fork_line), (2, 21))
    working = ((0, 3), (1, fork_line), (2, 22), (3, 6))
    return {
        "files": FILES, "functions": FUNCTIONS,
        "lines": [(0, 3, 0, 1 * MS, 2 * MS, 300 * MS), (0, 6, 3, 50 * MS, 0, 0)],
        "threads": [{"native_id": 7, "main": True, "python_ns": 51 * MS, "native_ns": 2 * MS,
                     "system_ns": 300 * MS, "unattributed_ns": 0, "cpu_ns": 53 * MS,
                     "engine_wait_ns": 0}],
        "stacks": [(idle, 0, 1 * MS, 2 * MS, 300 * MS), (working, 0, 50 * MS, 0, 0)],
        "samples": 35, "sampled_ns": 353 * MS, "lost_ns": 0,
    }


def test_a_workers_wait_under_the_parents_line_is_its_idle_time():
    snapshot = _snapshot()
    assert release_inherited(snapshot, FORK_STACK) == 303 * MS
    assert snapshot["lines"] == [(0, 6, 3, 50 * MS, 0, 0)]  # the task's line stays
    thread = snapshot["threads"][0]
    assert (thread["python_ns"], thread["native_ns"], thread["system_ns"]) == (50 * MS, 0, 0)
    assert thread["unattributed_ns"] == 303 * MS
    # The wait's stack keeps the child's own frames; the task's keeps all of them.
    assert snapshot["stacks"][0][0] == ((2, 21),)
    assert len(snapshot["stacks"][1][0]) == 4


def test_a_child_profile_has_idle_s_and_no_time_on_the_parents_line():
    profile = build_profile(_snapshot(), program="main.py", argv=["main.py"],
                            started_at="2000-01-01T00:00:00Z", elapsed_s=0.353, cpu_s=0.053,
                            sampling_interval_s=0.01, fork_stack=FORK_STACK,
                            read_lines=lambda path: ["x = 1"] * 30)
    assert profile["idle_s"] == 0.303
    assert profile["totals"]["unattributed_s"] == 0.303
    lines = {line["line"]: line for line in profile["files"]["/app/main.py"]["lines"]}
    assert 3 not in lines or lines[3]["system_s"] == 0.0
    assert lines[6]["python_s"] == 0.05


def test_time_stays_where_the_child_went_on_in_user_code():
    # The program called fork itself: the child goes on in that frame.
    snapshot = _snapshot()
    user_fork = [("/app/main.py", "<module>", 3)]
    snapshot["stacks"] = [(((0, 3), (2, 21)), 0, 1 * MS, 2 * MS, 300 * MS)]
    assert release_inherited(snapshot, user_fork) == 0
    # A parent's frame no longer at its fork-time line: the child returned into it.
    snapshot = _snapshot()
    assert release_inherited(snapshot, [("/app/main.py", "<module>", 4), FORK_STACK[1]]) == 0
    assert snapshot["lines"][0] == (0, 3, 0, 1 * MS, 2 * MS, 300 * MS)
