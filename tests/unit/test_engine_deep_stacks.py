"""Stacks deeper than the engine's stack table keeps (128 frames): both ends are recorded, the
middle replaced by a marker that counts the frames elided and says whether their functions are
all among the kept frames (stats.h, frames.c hl_walk_sample), checked against the
interpreter's own frame chain at the moment the sampler reads it."""

import functools
import sys
import threading
import time

import pytest

from heatline import _native
from heatline.data.snapshot import ELIDED_KEPT, ELIDED_LOST, ELIDED_OPEN, is_elided

MAX_DEPTH = 128  # stats.h: HL_MAX_DEPTH
OUTER = 63  # HL_OUTER_DEPTH
INNER = MAX_DEPTH - 1 - OUTER
WALK_LIMIT = 4096  # frames.c: MAX_FRAMES_VISITED


@pytest.fixture
def deep_recursion_allowed():
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 20000))
    yield
    sys.setrecursionlimit(limit)


def _true_stack():
    """The caller's frame chain, outermost first: ((file, qualname, first line), line)."""
    frame, chain = sys._getframe(1), []
    while frame is not None:
        code = frame.f_code
        name = getattr(code, "co_qualname", code.co_name)
        chain.append(((code.co_filename, name, code.co_firstlineno), frame.f_lineno))
        frame = frame.f_back
    return chain[::-1]


def _sleep_at_depth(make_call, depth, seconds):
    """Calls down to depth frames below here with make_call, then sleeps there (a still stack
    for the sampler to read) while the engine runs; returns the snapshot and the true stack."""
    seen = {}

    def bottom():
        time.sleep(seconds)
        stack = _true_stack()  # the line after the sleep's
        seen["stack"] = [*stack[:-1], (stack[-1][0], stack[-1][1] - 1)]

    _native.start(0.002, exclude_prefixes=[])
    try:
        make_call(depth, bottom)
    finally:
        _native.stop()
    return _native.snapshot(), seen["stack"]


def _recurse(depth, bottom):
    if depth:
        return _recurse(depth - 1, bottom)
    return bottom()


def _distinct_chain(depth, bottom):
    """depth distinct functions calling each other, the innermost calling bottom."""
    namespace = {"bottom": bottom}
    source = "".join(f"def f{i}():\n    return f{i + 1}()\n" for i in range(depth))
    source += f"def f{depth}():\n    return bottom()\n"
    exec(compile(source, "<chain>", "exec"), namespace)
    return namespace["f0"]()


def _recorded(snapshot, stack):
    """A snapshot stack's frames as _true_stack's, a marker as ("elided", marker, count)."""
    files, functions = snapshot["files"], snapshot["functions"]
    out = []
    for function_id, line in stack:
        if is_elided(function_id):
            out.append(("elided", function_id, line))
            continue
        f = functions[function_id]
        out.append(((files[f["file"]]["path"], f["qualname"], f["first_line"]), line))
    return out


def _sleeping_stacks(snapshot, truth):
    """The recorded stacks that end at the sleeping line (bottom's), with their times."""
    innermost = truth[-1]
    return [(_recorded(snapshot, frames), sum(ns)) for frames, _thread, *ns in snapshot["stacks"]
            if _recorded(snapshot, frames)[-1] == innermost]


def _slept_ns(snapshot, seconds):
    """What a sleep of `seconds` is charged at least: all of it but the two samples at its
    edges, which may each charge up to the longest gap between samples elsewhere."""
    return seconds * 1e9 - 2 * snapshot["max_sample_gap_ns"]


def _expected(truth, marker):
    return [*truth[:OUTER], ("elided", marker, len(truth) - OUTER - INNER), *truth[-INNER:]]


def test_a_deep_recursion_keeps_both_ends_and_counts_the_middle(deep_recursion_allowed):
    snapshot, truth = _sleep_at_depth(_recurse, 400, 0.3)
    assert len(truth) > 400
    stacks = _sleeping_stacks(snapshot, truth)
    assert stacks, "no stack ends at the sleeping line"
    # The elided frames all run _recurse, which is among the kept frames at both ends.
    middle = {key for key, _ in truth[OUTER:-INNER]}
    kept = {key for key, _ in truth[:OUTER] + truth[-INNER:]}
    marker = ELIDED_KEPT if middle <= kept else ELIDED_LOST
    assert middle == {(__file__, "_recurse", _recurse.__code__.co_firstlineno)}
    assert marker == ELIDED_KEPT
    want = _expected(truth, marker)
    # All the sleep is charged to that one stack: the outermost frames (pytest's, this test's)
    # are the thread's real outermost frames, the count is exact.
    frames, ns = max(stacks, key=lambda item: item[1])
    assert frames == want
    assert len(frames) == MAX_DEPTH
    assert ns >= _slept_ns(snapshot, 0.3)


def test_a_deep_chain_of_distinct_functions_says_that_functions_were_lost(
    deep_recursion_allowed,
):
    snapshot, truth = _sleep_at_depth(_distinct_chain, 300, 0.3)
    stacks = _sleeping_stacks(snapshot, truth)
    frames, ns = max(stacks, key=lambda item: item[1])
    # f(k) for the k in the middle are on no kept frame: their inclusive time cannot be right.
    assert frames == _expected(truth, ELIDED_LOST)
    assert ns >= _slept_ns(snapshot, 0.3)


def test_a_stack_that_just_fits_is_kept_whole(deep_recursion_allowed):
    here = len(_true_stack())  # this frame's depth; the call below adds _sleep_at_depth's
    depth = MAX_DEPTH - here - 3  # _sleep_at_depth, _recurse(depth) ... _recurse(0), bottom
    snapshot, truth = _sleep_at_depth(_recurse, depth, 0.2)
    assert len(truth) == MAX_DEPTH, len(truth)
    frames, _ = max(_sleeping_stacks(snapshot, truth), key=lambda item: item[1])
    assert frames == truth
    snapshot, truth = _sleep_at_depth(_recurse, depth + 1, 0.2)
    frames, _ = max(_sleeping_stacks(snapshot, truth), key=lambda item: item[1])
    assert frames == _expected(truth, ELIDED_KEPT)
    assert frames[OUTER] == ("elided", ELIDED_KEPT, 2)


def test_a_stack_deeper_than_the_walk_follows_keeps_its_inner_end(deep_recursion_allowed):
    # Past 4096 frames the walk stops (a tick's time stays bounded): the outer frames are not
    # known, so the marker is the stack's root, counts the frames followed past the inner
    # part, and says that functions may be missing.
    result = {}

    def run():  # in a thread of its own: a big enough C stack on every CPython
        result["value"] = _sleep_at_depth(_recurse, WALK_LIMIT + 200, 0.3)

    threading.stack_size(256 * 1024 * 1024)
    try:
        thread = threading.Thread(target=run)
        thread.start()
        thread.join()
    finally:
        threading.stack_size(0)
    snapshot, truth = result["value"]
    frames, ns = max(_sleeping_stacks(snapshot, truth), key=lambda item: item[1])
    assert frames[0] == ("elided", ELIDED_OPEN, WALK_LIMIT - INNER)
    assert frames[1:] == truth[-INNER:]
    assert ns >= _slept_ns(snapshot, 0.3)


_LIBRARY = compile(
    "def library_recurse(depth, then):\n"
    "    if depth:\n"
    "        return library_recurse(depth - 1, then)\n"
    "    return then()\n",
    "<library>", "exec")  # a pseudo-file: not user code


def test_the_line_charged_is_the_innermost_user_frame_even_among_elided_frames(
    deep_recursion_allowed,
):
    # Library frames innermost (300 of them) and between the user frame and the outer end
    # (100): the innermost user frame, user_middle's call, lies in the elided middle; the
    # sleep is charged to its line.
    namespace = {}
    exec(_LIBRARY, namespace)
    recurse = namespace["library_recurse"]

    def user_middle():
        return recurse(300, functools.partial(time.sleep, 0.3))  # the line charged

    _native.start(0.002, exclude_prefixes=[])
    try:
        recurse(100, user_middle)
    finally:
        _native.stop()
    snapshot = _native.snapshot()
    functions = snapshot["functions"]
    charged = {(functions[f]["qualname"].rsplit(".", 1)[-1], line): sum(ns)
               for _file, line, f, *ns in snapshot["lines"]}
    line = user_middle.__code__.co_firstlineno + 1
    assert charged.get(("user_middle", line), 0) >= _slept_ns(snapshot, 0.3), charged
    # And the sleep's stack has the marker in the middle, with user_middle's frame elided.
    frames, _thread, *ns = max(snapshot["stacks"], key=lambda stack: sum(stack[2:]))
    assert sum(ns) >= _slept_ns(snapshot, 0.3)
    assert len(frames) == MAX_DEPTH and frames[OUTER][0] == ELIDED_LOST, frames[OUTER]


class _Node:
    """Each level a class whose Python __init__ makes the next one. On 3.13, once the call
    site is specialized, each such call runs under a frame of CPython's own _Py_InitCleanup
    code object (file and function "__init__"), which checks that __init__ returned None: no
    line of the program, and not a frame of sys._getframe's chain."""

    def __init__(self, depth, bottom):
        if depth:
            _Node(depth - 1, bottom)
        else:
            bottom()


def _init_chain(depth, bottom):
    for _ in range(100):  # specializes _Node's own call of _Node
        _Node(2, lambda: None)
    _Node(depth, bottom)


def _shim_files(snapshot):
    return [f["path"] for f in snapshot["files"] if f["path"] in ("__init__", "<shim>")]


def test_cpythons_shim_frames_under_init_calls_are_no_frames_of_the_stack():
    # A chain that fits: the stack is the interpreter's chain exactly. On 3.13 the walker
    # listed one "__init__" frame (file "__init__", line 0) under each level before.
    snapshot, truth = _sleep_at_depth(_init_chain, 20, 0.2)
    frames, ns = max(_sleeping_stacks(snapshot, truth), key=lambda item: item[1])
    assert frames == truth
    assert ns >= _slept_ns(snapshot, 0.2)
    assert _shim_files(snapshot) == []


def test_shim_frames_in_a_deep_stack_are_no_frames_of_it_either(deep_recursion_allowed):
    # 300 levels: shims in the kept inner part, in the elided middle (the marker's count is of
    # the program's frames) and among the outermost frames kept (the walker skips a shim it
    # has met before without reading its code object).
    snapshot, truth = _sleep_at_depth(_init_chain, 300, 0.3)
    frames, ns = max(_sleeping_stacks(snapshot, truth), key=lambda item: item[1])
    assert frames == _expected(truth, ELIDED_KEPT)
    assert ns >= _slept_ns(snapshot, 0.3)
    assert _shim_files(snapshot) == []


def test_a_frame_running_code_with_the_trampolines_identity_is_stepped_over():
    # 3.12's interpreter trampoline, the code of the entry frame where C calls into the
    # interpreter, is stepped over by its owner byte; a frame read before that byte is written
    # showed a "<shim>" file (found by test_dump under load). Python cannot reach that code
    # object, so a copy of its identity (file "<shim>", name "<interpreter trampoline>") runs
    # here as a frame: the walker steps over it (and over any code so named) on 3.11+.
    if sys.version_info < (3, 11):
        pytest.skip("3.9 and 3.10 have no shim frames")

    def call_through_trampoline(depth, bottom):
        code = compile("bottom()\n", "<shim>", "exec").replace(
            co_name="<interpreter trampoline>", co_qualname="<interpreter trampoline>")
        exec(code, {"bottom": lambda: _recurse(depth, bottom)})

    snapshot, truth = _sleep_at_depth(call_through_trampoline, 3, 0.2)
    frames, _ = max(_sleeping_stacks(snapshot, truth), key=lambda item: item[1])
    assert [key[0] for key, _ in truth].count("<shim>") == 1
    assert frames == [frame for frame in truth if frame[0][0] != "<shim>"]
    assert _shim_files(snapshot) == []
