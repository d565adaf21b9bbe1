"""File and function names as the engine reads them from code objects: kept whole whatever
their length (issue 7, item 13) and equal to Python's own str even when a path's bytes are not
UTF-8 (item 5: surrogateescape'd bytes must not fail the snapshot)."""

import os

from heatline import _native

BODY = "def work():\n    t = 0\n    for i in range(400_000):\n        t += i\n    return t\n"


def _run_under_engine(filenames):
    """Compiles BODY under each filename, runs each work() under the engine, returns the
    snapshot's python+native ns per file path."""
    functions = []
    for filename in filenames:
        namespace = {}
        exec(compile(BODY, filename, "exec"), namespace)
        functions.append(namespace["work"])
    _native.start(0.001, exclude_prefixes=[])
    try:
        for work in functions:
            for _ in range(5):
                work()
    finally:
        _native.stop()
    snapshot = _native.snapshot()
    paths = [f["path"] for f in snapshot["files"]]
    totals = dict.fromkeys(paths, 0)
    for file, _, _, python_ns, native_ns, _ in snapshot["lines"]:
        totals[paths[file]] += python_ns + native_ns
    return totals


def test_paths_longer_than_1024_characters_are_kept_whole_and_apart():
    stem = "/tmp/" + "/".join(["d" * 99] * 20)  # 2,000+ characters shared by both
    first, second = stem + "/first.py", stem + "/second.py"
    totals = _run_under_engine([first, second])
    assert totals.get(first, 0) > 0, [p[-30:] for p in totals]
    assert totals.get(second, 0) > 0, [p[-30:] for p in totals]


def test_path_with_undecodable_bytes_comes_back_as_the_same_str():
    filename = os.fsdecode(b"/tmp/caf\xe9/loop\xff.py")  # lone surrogates, as Python makes them
    assert "\udce9" in filename
    totals = _run_under_engine([filename])
    assert totals.get(filename, 0) > 0, list(totals)


def test_current_stack_reports_undecodable_paths_unchanged():
    filename = os.fsdecode(b"/tmp/\xfe\xfd.py")
    namespace = {}
    exec(compile("def here(stack):\n    return stack()\n", filename, "exec"), namespace)
    stack = namespace["here"](_native._current_stack)
    assert stack[0][0] == filename
    assert stack[0][2] == 2
