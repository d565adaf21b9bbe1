"""The engine's building blocks, checked against CPython's own answers."""

import glob
import os
import sys
import threading
import time
import traceback
import types

import pytest

from heatline import _native


def _code_objects(code):
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _code_objects(const)


def _true_lines(code):
    """(start, end, line) ranges as CPython reports them."""
    if hasattr(code, "co_lines"):
        return list(code.co_lines())
    import dis

    starts = list(dis.findlinestarts(code))
    return [
        (offset, starts[i + 1][0] if i + 1 < len(starts) else len(code.co_code), line)
        for i, (offset, line) in enumerate(starts)
    ]


def test_line_table_decoder_agrees_with_cpython_on_stdlib_code():
    checked = 0
    stdlib = os.path.dirname(os.__file__)
    for path in sorted(glob.glob(os.path.join(stdlib, "*.py")))[:60]:
        with open(path, encoding="utf-8") as f:
            try:
                module = compile(f.read(), path, "exec")
            except SyntaxError:
                continue
        for code in _code_objects(module):
            for start, end, line in _true_lines(code):
                for offset in range(start, end, 2):
                    expected = -1 if line is None else line
                    assert _native._line_of(code, offset) == expected, (code, offset)
                    checked += 1
    assert checked > 10_000


def test_stack_walk_matches_the_interpreters_own_stack():
    def inner():
        # Both stacks are taken while this frame is on the same line.
        return _native._current_stack(), traceback.extract_stack()

    def outer():
        return inner()

    stack, summary = outer()
    expected = [(f.filename, f.name, f.lineno) for f in reversed(summary)]
    got = [(path, qualname.rsplit(".", 1)[-1], line) for path, qualname, line, _ in stack]
    assert got == expected


def test_this_test_file_is_user_code_and_pytest_is_not():
    stack = _native._current_stack()
    by_file = {path: user for path, _, _, user in stack}
    assert by_file[os.path.abspath(__file__)] is True


def _by_qualname(snapshot):
    totals = {}
    for _, _, function, python_ns, native_ns, system_ns, _cpu_wait_ns in snapshot["lines"]:
        name = snapshot["functions"][function]["qualname"]
        entry = totals.setdefault(name, [0, 0, 0])
        entry[0] += python_ns
        entry[1] += native_ns
        entry[2] += system_ns
    return totals


def _profile(function, *args):
    _native.start(0.002, exclude_prefixes=[])
    try:
        function(*args)
    finally:
        _native.stop()
    return _native.snapshot()


def _span():
    """The targets' _truth.Span: a thread's wall and busy time (and blocks) over a with-block."""
    targets = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "targets")
    if targets not in sys.path:
        sys.path.insert(0, targets)
    from _truth import Span

    return Span()


def _resolution_ns(snapshot):
    """How far a stretch of one state is charged from its length: the longest gap between
    ticks (one sample charges it whole) plus the longest tick (the state is read up to that
    late); the run's own figures, which a loaded machine stretches (docs/accuracy.md)."""
    return snapshot["max_sample_gap_ns"] + snapshot["max_tick_ns"]


SLEEPS = []


def sleeping_function():
    with _span() as span:
        time.sleep(0.3)
    SLEEPS.append(span)


def test_sleep_is_charged_as_system_time_to_the_sleeping_line():
    snapshot = _profile(sleeping_function)
    python_ns, native_ns, system_ns = _by_qualname(snapshot)["sleeping_function"]
    sleep, resolution = SLEEPS[-1], _resolution_ns(snapshot)
    # One blocked stretch: the sleep less its busy moments (entering it; after the wake-up,
    # waiting for a CPU: milliseconds on a busy machine), which the truth's clocks measure.
    # That last wait heatline counts as blocked (the thread has not run since it slept,
    # sampler.c) and the truth as busy (runnable): so the sleep's system time lies between
    # the wall time less the busy time and the wall time less the time on a CPU, each within
    # one resolution (11 ms over the first bound seen at load 5 on 2 cores).
    low = (sleep.wall_s - sleep.busy_s) * 1e9 - resolution
    high = (sleep.wall_s - sleep.on_cpu_s) * 1e9 + resolution
    assert low <= system_ns <= high, (system_ns, sleep.wall_s, sleep.busy_s, sleep.on_cpu_s)
    # Those busy moments are two stretches of running, each charged within one resolution.
    assert python_ns + native_ns <= sleep.busy_s * 1e9 + 2 * resolution


def test_the_longest_gap_between_samples_and_the_longest_tick_are_reported():
    # The lock held for 0.5 s (as a long snapshot would): no tick can run meanwhile, so one
    # sample covers at least that long, and the report says so. A tick is waited for before and
    # after the hold (a fixed sleep is not enough: on a loaded machine the sampler thread can get
    # no CPU in the whole run, and the report then has no tick at all).
    def tick():
        seen = _native.snapshot()["samples"]
        while _native.snapshot()["samples"] == seen:
            time.sleep(0.002)

    def run():
        tick()
        _native._hold_engine_lock(0.5)
        tick()

    snapshot = _profile(run)
    assert snapshot["max_sample_gap_ns"] >= 0.5e9
    assert snapshot["max_sample_gap_ns"] <= snapshot["sampled_ns"]
    assert 0 < snapshot["max_tick_ns"] < snapshot["max_sample_gap_ns"]
    # That gap is more than twice the interval: counted among the long ones, which charged at
    # least its length and at most all the time sampled.
    assert snapshot["long_gaps"] >= 1
    assert 0.5e9 <= snapshot["long_gap_ns"] <= snapshot["sampled_ns"]
    # A fresh session starts from zero: a gap of its own is inside the session (whatever the
    # load), and the 0.5 s one carried over would outlast it (a 0.3 s sleep: under 0.4 s but
    # on a starved machine).
    quiet = _profile(sleeping_function)
    assert quiet["max_sample_gap_ns"] <= quiet["sampled_ns"]
    assert quiet["long_gap_ns"] <= quiet["sampled_ns"]
    assert (quiet["long_gaps"] == 0) == (quiet["long_gap_ns"] == 0)


def spinning_function(cpu_s=0.3):
    """Spin until this thread has used cpu_s of CPU (not wall time: on a busy machine the
    thread gets less than a core, and the truth is what its own CPU clock says)."""
    start = time.thread_time()
    n = 0
    while time.thread_time() - start < cpu_s:
        n += 1
    return time.thread_time() - start


def test_every_live_thread_is_sampled_with_its_cpu_time():
    used = []
    worker = threading.Thread(target=lambda: used.append(spinning_function()))

    joins = []

    def run():
        worker.start()
        with _span() as join:
            worker.join()
        joins.append(join)

    snapshot = _profile(run)
    resolution = _resolution_ns(snapshot)
    threads = {t["native_id"]: t for t in snapshot["threads"]}
    sampled = threads[worker.native_id]
    assert sampled["main"] is False
    # CPU time is read at each of the thread's samples: what it used before its first one and
    # after its last one is left out, at most a gap each.
    assert sampled["cpu_ns"] == pytest.approx(used[0] * 1e9, abs=2 * resolution)
    main = [t for t in snapshot["threads"] if t["main"]]
    # Waiting in join(): its blocked time, within one resolution of the stretch's edge.
    blocked_ns = (joins[0].wall_s - joins[0].busy_s) * 1e9
    assert len(main) == 1 and main[0]["system_ns"] >= blocked_ns - resolution


def idle_wait(event):
    event.wait()  # where the idle threads wait


def _until_still(thread, step_s=0.02):
    """Once thread's CPU clock has stood still for step_s: it is blocked."""
    clock = time.pthread_getcpuclockid(thread.ident)
    before = time.clock_gettime_ns(clock)
    while True:
        time.sleep(step_s)
        now = time.clock_gettime_ns(clock)
        if now == before:
            return
        before = now


def test_a_thread_that_has_not_run_is_not_read_again_and_keeps_its_line():
    """sampler.c, "An idle thread's stack": a thread whose CPU clock stood still since its
    previous sample has that sample's stack, which is used again instead of read. The idle
    threads' whole wait still goes, as system time, to the line they wait at; the thread that
    runs is read at every sample."""
    event = threading.Event()
    idle = [threading.Thread(target=idle_wait, args=(event,)) for _ in range(3)]
    for thread in idle:
        thread.start()
    try:
        for thread in idle:
            _until_still(thread)
        snapshot = _profile(spinning_function, 0.3)
    finally:
        event.set()
        for thread in idle:
            thread.join()
    resolution = _resolution_ns(snapshot)
    threads = {t["native_id"]: t for t in snapshot["threads"]}
    waited = [threads[thread.native_id] for thread in idle]
    for entry in waited:
        # Blocked throughout: every sample charged it as system time.
        assert entry["system_ns"] >= snapshot["sampled_ns"] - resolution, (entry, snapshot)
    # All of it to one stack (each thread's): through idle_wait down to the lock's wait.
    functions = snapshot["functions"]
    through = [(frames, system_ns) for frames, _, _, _, system_ns, _ in snapshot["stacks"]
               if any(functions[f]["qualname"] == "idle_wait" for f, _ in frames)]
    assert len({frames for frames, _ in through}) == 1, through
    assert functions[through[0][0][-1][0]]["qualname"].split(".")[-1] == "wait"  # Condition's
    assert sum(ns for _, ns in through) >= sum(e["system_ns"] for e in waited) - 3 * resolution
    # A thread that used no CPU between its samples (cpu_ns 0: it never ran) was read at its
    # first sample only. (Any thread queued for a CPU through a whole gap, the spinning one
    # too on a busy machine, is not read again either: it did not run.)
    still = [entry for entry in waited if entry["cpu_ns"] == 0]
    assert still, waited
    assert snapshot["stacks_reused"] >= len(still) * (snapshot["samples"] - 1)
    # The spinning thread's time is all running time, at its own line.
    main = [t for t in snapshot["threads"] if t["main"]][0]
    python_ns, _, _ = _by_qualname(snapshot)["spinning_function"]
    assert python_ns >= main["cpu_ns"] - 2 * resolution


def test_start_twice_is_an_error_and_stop_is_idempotent():
    _native.start(0.01, exclude_prefixes=[])
    try:
        with pytest.raises(RuntimeError):
            _native.start(0.01, exclude_prefixes=[])
        assert _native.is_running()
    finally:
        _native.stop()
    _native.stop()
    assert not _native.is_running()


def test_paused_engine_charges_nothing():
    _native.start(0.002, exclude_prefixes=[], paused=True)
    time.sleep(0.1)
    _native.stop()
    assert _native.snapshot()["samples"] == 0


def _deep_copies(depth=300, copies=2000):
    import copy

    nested = []
    for _ in range(depth):
        nested = [nested]
    for _ in range(copies):
        copy.deepcopy(nested)


def test_a_deep_quick_stack_is_read_and_its_stacks_add_up_to_the_lines_to_the_ns():
    # copy.deepcopy of a 300-deep list: about 600 quick frames, deeper than the 128 frames
    # kept per stack, returning while the sampler reads them: the walk must stay safe.
    import sys

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 5000))
    try:
        snapshot = _profile(_deep_copies)
    finally:
        sys.setrecursionlimit(limit)
    lines_ns = sum(sum(line[3:]) for line in snapshot["lines"])
    unattributed_ns = sum(t["unattributed_ns"] for t in snapshot["threads"])
    stacks_ns = sum(sum(stack[2:]) for stack in snapshot["stacks"])
    assert snapshot["samples"] > 20
    # Every ns charged to a line or left unattributed is in exactly one stack, or dropped.
    assert stacks_ns == lines_ns + unattributed_ns - snapshot["stacks_dropped_ns"]
    # What could not be read at all is a small share of the time sampled.
    assert snapshot["lost_ns"] < 0.05 * snapshot["sampled_ns"]
