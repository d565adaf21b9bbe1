"""Memory profiling accuracy against ground-truth programs (tests/targets/memory*.py).

Each target knows what every tagged line allocates, keeps, leaks and copies
(tests/targets/_memtruth.py; test_memory_truth.py checks those truths against tracemalloc and
a memcpy probe). A second run of the same target with tracemalloc gives the exact peak.
heatline profiles the target, and what it reports is checked against that truth:

- the peak within 3% of the exact peak, and peak_at at the right line and time;
- each line that allocates at least 10 MB within 10% of its true total, Python and native
  separately, and not charging one kind to the other;
- copy volume within 15%, and no copy charged to conversions that copy nothing;
- every planted leak flagged, no transient or kept-once line flagged;
- timelines well formed and bounded, also for a long run; --cpu-only records no memory.

The targets: memory.py (Python and numpy allocations kept, freed, leaked and copied, one
allocating in a worker thread without the GIL, and a spike that makes the peak),
memory_threads.py (five threads allocating at once, a leak in a worker) and memory_raw.py
(native memory that C extensions get through CPython's raw allocator: lzma's dictionaries).

Sampling. heatline samples small allocations about once per window W of bytes. With the
least favourable scheme (independent, Poisson, samples) an estimate of T bytes of small objects
has a relative standard error of sqrt(W / T). The targets' judged lines of small objects
allocate at least ~48 MB, so at WINDOW = 32 KiB the 10% criterion is at least 3.8 standard
errors even then. (Large allocations are recorded exactly.) Scaled-down runs
(HEATLINE_TARGET_SCALE, e.g. under valgrind) scale WINDOW too, which keeps that ratio. The
headline criteria are also checked at heatline's default window ("@default" runs), since that
is what users get; there a Poisson sampler would only have 2.7 standard errors of room, and a
failure of only those runs points at sampling variance rather than at attribution.
Where a check is not a criterion of the issue (a line's peak, growth, freed bytes), its
tolerance is the larger of 10% and four (Poisson) standard errors of the sampled part.

These are not timing tests, so they also run under the sanitizer build, scaled down by half.
"""

import datetime
import itertools
import json
import math
import os
import subprocess
import sys

import pytest

from heatline.data.memory import LEAK_THRESHOLD, leak_likelihood

pytest.importorskip("numpy")

SANITIZED = bool(os.environ.get("HEATLINE_SANITIZED"))
# Full size under ASan too: at half size the program's fixed baseline (imports, the truth's
# own bookkeeping, about 1.5 MB) comes to 2.4-3.1% of the peak, at the 3% criterion's edge;
# at full size the suite takes about 20 s more under ASan.
SCALE = float(os.environ.get("HEATLINE_TARGET_SCALE", "1"))
WINDOW = max(4096, int(32768 * SCALE))
TARGETS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "targets")
PROGRAMS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "targets")
MB = 1_000_000
JUDGED = 10 * MB  # the issue: each line that allocates at least 10 MB
MAX_TIMELINE_POINTS = 500
MEMORY_LINE_FIELDS = (
    "alloc_python_bytes", "alloc_native_bytes", "freed_bytes", "growth_bytes", "peak_bytes",
    "copy_bytes", "timeline", "leak",
)


def _env(extra):
    env = dict(os.environ)
    for name in ("FORCE_COLOR", "NO_COLOR", "COLUMNS", "LINES", "HEATLINE_TRUTH_MODE"):
        env.pop(name, None)
    env["HEATLINE_TARGET_SCALE"] = str(SCALE)
    # The targets use no BLAS, but importing numpy starts OpenBLAS's thread pool, and OpenBLAS
    # 0.3.27 (numpy 2.0.2, the last numpy for 3.9) maps a 32 MiB buffer from one of its
    # threads while the library loads. tracemalloc never sees that mapping; heatline counts it
    # only when the thread maps it after the library's GOT was rewritten, a race (on 3.9 the
    # peak can read 5.3% high; docs/design-memory.md, "Where allocations are seen"). One BLAS
    # thread maps no buffer at load, so both runs measure the same program.
    env["OPENBLAS_NUM_THREADS"] = "1"
    env.update(extra)
    return env


def _heatline(*args, env=None, timeout=600):
    return subprocess.run(
        [sys.executable, "-m", "heatline", *args], env=_env(env or {}), capture_output=True,
        text=True, timeout=timeout, check=False,
    )


_exact = {}


def _exact_truth(name, directory):
    """The truth of a separate tracemalloc run of the target (exact peak), once per target."""
    if name not in _exact:
        path = directory / "exact.json"
        result = subprocess.run(
            [sys.executable, os.path.join(TARGETS, name)], capture_output=True, text=True,
            timeout=600, check=False,
            env=_env({"HEATLINE_TRUTH": str(path), "HEATLINE_TRUTH_MODE": "tracemalloc"}),
        )
        assert result.returncode == 0, result.stderr
        _exact[name] = json.loads(path.read_text())
    return _exact[name]


class Run:
    """One target under heatline: its truth, heatline's profile, and the exact truth."""

    def __init__(self, name, directory, window):
        self.path = os.path.join(TARGETS, name)
        self.window = window
        self.exact = _exact_truth(name, directory)
        truth_path, profile_path = directory / "truth.json", directory / "profile.json"
        self.record(truth_path, profile_path)
        self.truth = json.loads(truth_path.read_text())
        self.profile = json.loads(profile_path.read_text())
        assert self.path in self.profile["files"], sorted(self.profile["files"])
        entry = self.profile["files"][self.path]
        self.lines = {line["line"]: line for line in entry["lines"]}
        self.functions = {function["qualname"]: function for function in entry["functions"]}

    def record(self, truth_path, profile_path):
        """Profile the target (here with the heatline command) into profile_path."""
        options = [] if self.window is None else ["--memory-sampling-window", str(self.window)]
        result = _heatline(
            "-q", *options, "-o", str(profile_path), self.path,
            env={"HEATLINE_TRUTH": str(truth_path)},
        )
        assert result.returncode == 0, result.stderr

    def line(self, number):
        return self.lines[int(number)]

    def truth_lines(self):
        return [(int(number), entry) for number, entry in sorted(self.truth["lines"].items())]

    def to_profile_time(self, truth_s):
        """A time of the truth's clock (seconds since the target started) in the profile's
        (seconds since profiling started, at started_at)."""
        started = datetime.datetime.strptime(
            self.profile["started_at"], "%Y-%m-%dT%H:%M:%S.%fZ"
        ).replace(tzinfo=datetime.timezone.utc)
        return truth_s + self.truth["started_unix_s"] - started.timestamp()


_runs = {}


@pytest.fixture(scope="module")
def target(tmp_path_factory):
    """target("memory.py"): the run at WINDOW; target("memory.py@default"): at heatline's
    default window (whatever it is: the issue's criteria hold for what users get)."""

    def get(key):
        if key not in _runs:
            name, _, variant = key.partition("@")
            directory = tmp_path_factory.mktemp(key.replace(".", "_").replace("@", "_"))
            _runs[key] = Run(name, directory, None if variant == "default" else WINDOW)
        return _runs[key]

    return get


ALL = ["memory.py", "memory_threads.py", "memory_raw.py"]
# At the default window too (not scaled down under ASan: only in the normal build).
DEFAULT = [] if SANITIZED else ["memory.py@default", "memory_threads.py@default"]


def _tolerance(value, python_part, window):
    """The larger of 10% and four standard errors of sampling python_part bytes (treating all
    of them as small objects, which overstates the error for large ones)."""
    return max(0.10 * value, 4 * math.sqrt(window * max(python_part, 0)))


# -- the profile carries memory at all ----------------------------------------------------


def test_memory_is_on_by_default_with_the_requested_window(target):
    run = target("memory.py")
    assert run.profile["memory"]["enabled"] is True
    assert run.profile["memory"]["sampling_window_bytes"] == WINDOW
    for number, _ in run.truth_lines():
        missing = [key for key in MEMORY_LINE_FIELDS if key not in run.line(number)]
        assert not missing, f"line {number} lacks {missing}"
    for key in ("peak_bytes", "peak_at", "memory_timeline"):
        assert key in run.profile, key


# -- the peak -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ALL + DEFAULT)
def test_peak_is_within_3_percent_of_the_exact_peak(target, name):
    run = target(name)
    exact = run.exact["peak"]["bytes"]
    got = run.profile["peak_bytes"]
    assert abs(got - exact) <= 0.03 * exact, f"peak {got} vs exact {exact} ({got / exact - 1:+.1%})"


def test_peak_at_is_the_spike_line_when_it_happened(target):
    run = target("memory.py")
    spike = run.truth["spike"]
    assert run.exact["peak"]["line"] == spike["line"]  # the truth agrees with itself
    peak_at = run.profile["peak_at"]
    assert (peak_at["file"], peak_at["line"]) == (run.path, spike["line"]), peak_at
    # The spike's memory lives about 10 ms; allow 0.1 s for clocks and rounding.
    started = run.to_profile_time(spike["started_s"])
    ended = run.to_profile_time(spike["ended_s"])
    assert started - 0.1 <= peak_at["t_s"] <= ended + 0.1, (peak_at, started, ended)


def test_peak_at_of_raw_allocations_is_the_last_scratch_decoder(target):
    run = target("memory_raw.py")
    scratch = run.exact["peak"]["line"]
    assert run.truth["lines"][str(scratch)]["tag"] == "lzma_scratch"
    peak_at = run.profile["peak_at"]
    # The peak is taken at the sampled event that set the highest live estimate. While the
    # scratch decoder is alive, the truth's own bookkeeping (_memtruth.py, a few hundred bytes
    # of Python objects per call) may take a sample point (about 1 run in 100 at this window)
    # and so be the event at the top; any other line of the target would be wrong.
    assert (peak_at["file"], peak_at["line"]) == (run.path, scratch) or peak_at["file"] == (
        os.path.join(TARGETS, "_memtruth.py")
    ), peak_at
    # in the last round: after the last leak
    last_leak = max(run.truth["lines"][str(n)]["last_s"] for n in run.truth["leaks"])
    assert peak_at["t_s"] >= run.to_profile_time(last_leak) - 0.1, peak_at


def test_peak_of_threads_target_is_at_one_of_its_lines(target):
    run = target("memory_threads.py")
    peak_at = run.profile["peak_at"]
    assert peak_at["file"] in (run.path, os.path.join(TARGETS, "_memtruth.py")), peak_at
    assert 0 <= peak_at["t_s"] <= run.profile["elapsed_s"]


# -- allocations per line and per function ------------------------------------------------------


def _name(number, truth):
    return f"line {number} ({truth['tag']})"


def _check_split(where, truth, got, errors):
    total = truth["alloc_python_bytes"] + truth["alloc_native_bytes"]
    if total < JUDGED:
        return
    for kind in ("alloc_python_bytes", "alloc_native_bytes"):
        want = truth[kind]
        if want >= JUDGED:
            if abs(got[kind] - want) > 0.10 * want:
                off = got[kind] / want - 1
                errors.append(f"{where}: {kind} {got[kind]} vs true {want} ({off:+.1%})")
        elif got[kind] > want + 0.10 * total:
            # A line that allocates little of this kind must not be charged much of it.
            errors.append(f"{where}: {kind} {got[kind]} vs true {want} of {total} in all")


@pytest.mark.parametrize("name", ALL + DEFAULT)
def test_lines_allocating_10_mb_are_within_10_percent_python_and_native(target, name):
    run = target(name)
    errors = []
    for number, truth in run.truth_lines():
        _check_split(_name(number, truth), truth, run.line(number), errors)
    assert not errors, "\n".join(errors)


@pytest.mark.parametrize("name", ALL)
def test_functions_allocating_10_mb_are_within_10_percent(target, name):
    run = target(name)
    errors = []
    for qualname, truth in run.truth["functions"].items():
        assert qualname in run.functions, f"no function {qualname} in the profile"
        _check_split(qualname, truth, run.functions[qualname], errors)
    assert not errors, "\n".join(errors)


@pytest.mark.parametrize("name", ALL)
def test_growth_freed_and_line_peaks_follow_the_truth(target, name):
    run = target(name)
    errors = []
    for number, truth in run.truth_lines():
        got = run.line(number)
        python = truth["alloc_python_bytes"]
        for key in ("growth_bytes", "freed_bytes", "peak_bytes"):
            want = truth[key]
            # the python part of this quantity, in proportion, for the sampling error
            share = python / max(1, truth["alloc_python_bytes"] + truth["alloc_native_bytes"])
            if want >= JUDGED:
                window = run.profile["memory"]["sampling_window_bytes"]
                if abs(got[key] - want) > _tolerance(want, share * want, window):
                    errors.append(f"{_name(number, truth)}: {key} {got[key]} vs true {want}")
        # Freed by the end: nothing left growing (a sampled freed block is freed exactly).
        if (
            truth["kind"] in ("transient", "spike")
            and truth["freed_bytes"] >= JUDGED
            and got["growth_bytes"] > max(1 * MB, 0.02 * truth["freed_bytes"])
        ):
            errors.append(f"{_name(number, truth)}: growth {got['growth_bytes']}, all freed")
    assert not errors, "\n".join(errors)


# -- copies ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["memory.py", "memory_threads.py"] + DEFAULT)
def test_copy_volume_is_within_15_percent(target, name):
    run = target(name)
    errors = []
    want_total = got_total = 0
    for number, truth in run.truth_lines():
        got = run.line(number)["copy_bytes"]
        want = truth["copy_bytes"]
        want_total += want
        got_total += got
        if want >= JUDGED and abs(got - want) > 0.15 * want:
            off = got / want - 1
            errors.append(f"{_name(number, truth)}: copy {got} vs true {want} ({off:+.1%})")
    assert not errors, "\n".join(errors)
    assert abs(got_total - want_total) <= 0.15 * want_total, (got_total, want_total)


def test_conversions_that_copy_nothing_show_no_copy_volume(target):
    # tolist() of floats and np.array(list_of_floats) convert element by element: no
    # memcpy/memmove (see memory.py's docstring and the probe in test_memory_truth.py).
    run = target("memory.py")
    checked = 0
    for number, truth in run.truth_lines():
        total = truth["alloc_python_bytes"] + truth["alloc_native_bytes"]
        if truth["copy_bytes"] == 0 and total >= JUDGED:
            checked += 1
            got = run.line(number)["copy_bytes"]
            assert got <= 0.02 * total + 4 * WINDOW, f"{_name(number, truth)}: copy {got}"
    assert checked >= 3


# -- leaks -------------------------------------------------------------------------------------

# The engine keeps a line's timeline in this many buckets of equal width, starting at its first
# event: 1 ms wide, doubled (neighbours merged) whenever an event falls beyond the last one
# (stats.h, hl_timeline). Each bucket keeps its highest point and its last.
LINE_TIMELINE_BUCKETS = 32


def _bucket_s(timeline):
    """The width of the buckets of a line's timeline: the narrowest the doubling can have left
    for the span from its first point to its last (the last point is the line's last event)."""
    span, width = timeline[-1][0] - timeline[0][0], 0.001
    while LINE_TIMELINE_BUCKETS * width <= span:
        width *= 2
    return width


def _leak_likelihoods(run, number):
    """(lowest, highest) likelihood the leak rule can give this planted leak in this run,
    from the line's true growth (the truth's steps: when each run of the line ended, and what
    it held by then; the clocks matched at the last step, the timeline's last point being the
    line's last event) and what the profile's timeline can make of it:
    - a bucket's point is its highest value, reached by its last step: each of the rule's
      moments (first point, first reaching 25%, 75% and the end level) is up to one bucket
      after the true one, and a level right on a step's edge (25% and 75% of 24 equal steps)
      may be passed one step later when a sampled small object (the array's header) sits
      above it;
    - where the line's bytes are sampled (Python objects), the level the profile reaches at a
      step is an estimate, with a relative standard error of sqrt(window / bytes held then):
      the 25% and 75% moments move by that many steps (times the local time per step),
      which moves the likelihood by 2 / span per second of their difference; four standard
      errors are allowed, as in _tolerance.

    The rule reads wall time, which the machine's load moves: a program held up before its
    leak's middle half or after it has, by the rule, grown in a burst rather than steadily.
    So what the test can ask of a run follows from that run's own timing."""
    truth = run.truth["lines"][str(number)]
    steps = truth["steps"]
    timeline = run.line(number)["timeline"]
    offset = timeline[-1][0] - steps[-1][0]
    times = [t + offset for t, _ in steps]
    last = len(times) - 1
    total = steps[-1][1]
    bucket = _bucket_s(timeline)
    end = run.profile["elapsed_s"]

    def first_step(fraction):
        return next(i for i, (_, held) in enumerate(steps) if held >= fraction * total)

    def window(index, edge):
        return times[index], times[min(index + edge, last)] + bucket

    quarter, three_quarters = first_step(0.25), first_step(0.75)
    corners = itertools.product(window(0, 0), window(quarter, 1), window(three_quarters, 1),
                                window(last, 0))
    values = [leak_likelihood(*corner, end) for corner in corners]
    window_bytes = run.profile["memory"]["sampling_window_bytes"]
    python_share = truth["alloc_python_bytes"] / total

    def moment_error_s(index):
        held = steps[index][1] * python_share
        if held <= 0:
            return 0.0
        moved_steps = math.sqrt(window_bytes / held) * (index + 1)
        per_step = (times[last] - times[0]) / last
        return moved_steps * per_step

    error = math.hypot(moment_error_s(quarter), moment_error_s(three_quarters))
    sampling = 4 * 2 * error / (end - times[0])
    return max(min(values) - sampling, 0.0), min(max(values) + sampling, 1.0)


def _expected_leaks(run):
    """{line: True (must be flagged), False (must not be: this run's timing made it a burst),
    None (either: the run's likelihood straddles the threshold)}, and each line's range."""
    ranges = {number: _leak_likelihoods(run, number) for number in run.truth["leaks"]}
    expected = {
        number: True if low >= LEAK_THRESHOLD else False if high < LEAK_THRESHOLD else None
        for number, (low, high) in ranges.items()
    }
    return expected, ranges


@pytest.mark.parametrize("name", ALL + DEFAULT)
def test_planted_leaks_are_flagged_and_nothing_else(target, name):
    run = target(name)
    errors = []
    expected, ranges = _expected_leaks(run)
    for number in run.truth["leaks"]:
        leak = run.line(number)["leak"]
        low, high = ranges[number]
        if leak is None:
            if expected[number]:
                errors.append(f"leak at line {number} not flagged (this run's own timing gives "
                              f"it a likelihood of {low:.2f}-{high:.2f})")
            continue
        if expected[number] is False:
            errors.append(f"line {number} flagged ({leak}) though this run's own timing gives "
                          f"it a likelihood of {low:.2f}-{high:.2f}")
        if not low - 1e-3 <= leak["likelihood"] <= high + 1e-3:
            errors.append(f"line {number}: likelihood {leak['likelihood']}, not within "
                          f"{low:.3f}-{high:.3f} from its true growth")
        rate = run.truth["leak_rates"][str(number)]
        # The rate over the span of the leak; a rule measuring over the whole run differs by
        # the time before the first and after the last round: a factor of two either way.
        if not 0.5 * rate <= leak["growth_bytes_per_s"] <= 2.0 * rate:
            got = leak["growth_bytes_per_s"]
            errors.append(f"line {number}: growth {got:.0f} B/s vs {rate:.0f}")
    for number in run.truth["not_leaks"]:
        leak = run.line(number)["leak"]
        if leak is not None:
            kind = run.truth["lines"][str(number)]["kind"]
            errors.append(f"{kind} line {number} flagged as a leak: {leak}")
    flagged = {n for n, line in run.lines.items() if line.get("leak") is not None}
    if flagged - set(run.truth["leaks"]):
        wrong = sorted(flagged - set(run.truth["leaks"]))
        errors.append(f"lines flagged that leak nothing: {wrong}")
    assert not errors, "\n".join(errors)


@pytest.mark.parametrize("name", ALL)
def test_functions_are_flagged_when_they_contain_a_planted_leak(target, name):
    run = target(name)
    expected, ranges = _expected_leaks(run)
    # A function is flagged when one of its lines is (the lines' verdicts are checked above).
    leaking = {run.truth["lines"][str(n)]["function"] for n in run.truth["leaks"]
               if run.line(n)["leak"] is not None}
    for qualname in run.truth["functions"]:
        assert qualname in run.functions, f"no function {qualname} in the profile"
        flagged = run.functions[qualname].get("leak") is not None
        assert flagged == (qualname in leaking), qualname
    # Every function with a planted leak that this run's timing keeps a leak is among them.
    for number, must in expected.items():
        if must:
            assert run.truth["lines"][str(number)]["function"] in leaking, (number, ranges)


# -- timelines ---------------------------------------------------------------------------------


def _check_timeline(where, points, end_s, errors):
    if not isinstance(points, list) or len(points) > MAX_TIMELINE_POINTS:
        errors.append(f"{where}: timeline of {len(points)} points")
        return
    previous = 0.0
    for point in points:
        if len(point) != 2 or point[1] < 0 or not previous <= point[0] <= end_s:
            errors.append(f"{where}: bad point {point}")
            return
        previous = point[0]


@pytest.mark.parametrize("name", ALL)
def test_timelines_are_well_formed_and_bounded(target, name):
    run = target(name)
    end_s = run.profile["elapsed_s"] + 0.5
    errors = []
    _check_timeline("memory_timeline", run.profile["memory_timeline"], end_s, errors)
    for number, line in run.lines.items():
        _check_timeline(f"line {number}", line.get("timeline") or [], end_s, errors)
    for qualname, function in run.functions.items():
        _check_timeline(qualname, function.get("timeline") or [], end_s, errors)
    assert not errors, "\n".join(errors[:20])
    assert run.profile["memory_timeline"], "empty memory_timeline"
    assert max(b for _, b in run.profile["memory_timeline"]) <= 1.01 * run.profile["peak_bytes"]


def test_leak_timeline_grows_through_the_run_and_kept_once_stays_flat(target):
    run = target("memory.py")
    for number in run.truth["leaks"]:
        final = run.truth["lines"][str(number)]["growth_bytes"]
        values = [b for _, b in run.line(number)["timeline"]]
        assert values and values[-1] >= 0.75 * final, (number, values[-5:], final)
        # Not one step: the line is seen part-way through its growth.
        assert any(0.2 * final <= v <= 0.8 * final for v in values), (number, values)
    for number, truth in run.truth_lines():
        if truth["kind"] == "kept_once" and truth["growth_bytes"] >= JUDGED:
            kept = truth["growth_bytes"]
            values = [b for _, b in run.line(number)["timeline"]]
            assert values and max(values) <= 1.1 * kept + 4 * WINDOW, (number, max(values), kept)
            # Once allocated (which may take a few points: a list of many objects ramps up),
            # it stays: it never drops again.
            arrived = [i for i, v in enumerate(values) if v >= 0.9 * kept]
            assert arrived, (number, values, kept)
            assert all(v >= 0.9 * kept for v in values[arrived[0]:]), (number, values, kept)


def test_footprint_at_the_end_is_what_stays_alive(target):
    run = target("memory.py")
    alive = sum(entry["growth_bytes"] for entry in run.truth["lines"].values())
    untagged = run.exact["peak"]["bytes"] - run.exact["peak_construction_bytes"]  # imports etc.
    last = run.profile["memory_timeline"][-1][1]
    assert 0.9 * alive <= last <= 1.1 * (alive + untagged), (last, alive, untagged)


def test_timelines_and_file_size_do_not_grow_with_run_length(tmp_path):
    sizes, points = {}, {}
    for seconds in (0.5, 2.0):
        profile_path = tmp_path / f"churn{seconds}.json"
        result = _heatline(
            "-q", "--memory-sampling-window", str(WINDOW), "-o", str(profile_path),
            os.path.join(PROGRAMS, "mem_churn.py"), str(seconds * max(SCALE, 0.5)),
        )
        assert result.returncode == 0, result.stderr
        profile = json.loads(profile_path.read_text())
        sizes[seconds] = profile_path.stat().st_size
        longest = max(
            [len(profile["memory_timeline"])]
            + [
                len(line.get("timeline") or [])
                for entry in profile["files"].values()
                for line in entry["lines"]
            ]
        )
        points[seconds] = longest
        assert longest <= MAX_TIMELINE_POINTS, (seconds, longest)
    # Four times longer, not four times bigger: the same lines, decimated timelines. (A
    # profile keeping every sample would be megabytes here: ~2 GB allocated per second.)
    assert sizes[2.0] <= 2 * sizes[0.5] + 100_000, sizes


# -- --cpu-only ------------------------------------------------------------------------------


def _is_empty(value):
    return value in (None, 0, 0.0, [], {}, False)


def test_cpu_only_records_no_memory(tmp_path):
    profile_path = tmp_path / "profile.json"
    result = _heatline(
        "-q", "--cpu-only", "-o", str(profile_path), os.path.join(TARGETS, "memory.py"),
        env={"HEATLINE_TARGET_SCALE": str(0.25 * SCALE)},
    )
    assert result.returncode == 0, result.stderr
    profile = json.loads(profile_path.read_text())
    assert profile["memory"]["enabled"] is False
    for key in ("peak_bytes", "peak_at", "memory_timeline"):
        assert _is_empty(profile.get(key)), (key, profile.get(key))
    for path, entry in profile["files"].items():
        for item in entry["lines"] + entry["functions"]:
            numbers = {
                key: item.get(key) for key in MEMORY_LINE_FIELDS if not _is_empty(item.get(key))
            }
            assert not numbers, (path, item.get("line", item.get("qualname")), numbers)
    # CPU profiling itself still works.
    assert profile["totals"]["attributed_s"] > 0
