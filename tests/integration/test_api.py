"""Profiling from inside a program (heatline.start/stop, heatline.profile, heatline.Profile),
run the way a user does: a program, in its own process, that profiles work whose truth is known
(tests/targets/), checked with the accuracy tests' own checks and tolerances."""

import json
import os
import sys
import textwrap

import pytest

import test_accuracy
import test_memory_accuracy

TARGETS = test_accuracy.TARGETS
INTERVAL = test_accuracy.INTERVAL
timing = pytest.mark.skipif(
    bool(os.environ.get("HEATLINE_SANITIZED")), reason="timing is not meaningful under ASan"
)


def _program(tmp_path, body, *args, run_python, env=None):
    """Run `body` (after `import heatline` and the targets on sys.path) as a program; its
    stdout, parsed as JSON when it prints any."""
    path = tmp_path / "program.py"
    path.write_text(
        f"import sys\nsys.path.insert(0, {TARGETS!r})\nimport heatline\n"
        + textwrap.dedent(body)
    )
    result = run_python(str(path), *args, env=env, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout) if result.stdout.strip() else None


def _truth_env(tmp_path):
    return {"HEATLINE_TRUTH": str(tmp_path / "truth.json")}


def _truth(tmp_path):
    return json.loads((tmp_path / "truth.json").read_text())


def _check(truth, profile):
    """test_accuracy's check of `profile` (a profile's data) against the phases' truth; a
    failure also shows the threads' figures (engine_wait_s: heatline's own lock) and the
    sampler's longest gap and tick."""
    try:
        test_accuracy._check(truth, test_accuracy.measured(profile),
                             test_accuracy.mean_gap_s(profile),
                             test_accuracy.waits_measured(profile))
    except AssertionError as failure:
        sampler = {k: profile.get(k) for k in ("samples", "max_sample_gap_s", "max_tick_s")}
        raise AssertionError(
            f"{failure}\nthreads: {profile['threads']}\nsampler: {sampler}"
        ) from None


@timing
def test_start_in_a_thread_profiles_every_thread_within_tolerance(tmp_path, run_python):
    """Started from a thread that is not the main one, stopped from a third: the main thread's
    phases (main_thread.py) and those of a thread that was already running before start() are
    charged within the CLI's tolerances; the main thread is reported as main."""
    pytest.importorskip("numpy")
    out = _program(tmp_path, f"""
        import json, os, threading
        import main_thread, threads
        go = threading.Event()
        buffer = b"\\x01" * int(150_000_000 * threads.SCALE)
        early = threading.Thread(target=lambda: (go.wait(), threads.hash_worker(buffer)))
        early.start()  # running before start()
        starter = threading.Thread(
            target=heatline.start, kwargs={{"sampling_interval": {INTERVAL}}}
        )
        starter.start(); starter.join()
        go.set(); early.join()
        main_thread.main()
        stopped = []
        stopper = threading.Thread(target=lambda: stopped.append(heatline.stop()))
        stopper.start(); stopper.join()
        stopped[0].save(sys.argv[1])
        print(json.dumps({{"main": threading.main_thread().native_id,
                          "early": early.native_id}}))
    """, str(tmp_path / "p.json"), run_python=run_python, env=_truth_env(tmp_path))
    profile = json.loads((tmp_path / "p.json").read_text())
    _check(_truth(tmp_path), profile)
    threads = {thread["native_id"]: thread for thread in profile["threads"]}
    assert threads[out["main"]]["main"] is True
    assert threads[out["early"]]["main"] is False
    assert threads[out["early"]]["native_s"] > 0


@timing
def test_decorator_and_context_manager_profile_within_tolerance(tmp_path, run_python):
    pytest.importorskip("numpy")
    out = _program(tmp_path, f"""
        import json
        import main_thread

        @heatline.profile(quiet=True, sampling_interval={INTERVAL})
        def run():
            main_thread.python_loop()
            main_thread.sleep_phase()

        assert run() is None
        decorated = run.heatline_profile.data
        with heatline.profile(sampling_interval={INTERVAL}) as p:
            try:
                p.data
            except heatline.HeatlineError as exc:
                inside = str(exc)
            main_thread.hash_buffer(b"\\x01" * 300_000_000)
        print(json.dumps({{"decorated": decorated, "block": p.data, "inside": inside}}))
    """, run_python=run_python, env=_truth_env(tmp_path))
    truth = _truth(tmp_path)
    decorated = test_accuracy.measured(out["decorated"])
    _check({k: truth[k] for k in ("python_loop", "sleep_phase")}, out["decorated"])
    assert "hash_buffer" not in decorated
    block = test_accuracy.measured(out["block"])
    assert "python_loop" not in block
    _check({"hash_buffer": truth["hash_buffer"]}, out["block"])
    assert "with" in out["inside"]


@timing
def test_pause_and_resume_drive_the_api_session(tmp_path, run_python):
    """Started with off=True: nothing is charged until resume(); pause() stops charging."""
    pytest.importorskip("numpy")
    out = _program(tmp_path, f"""
        import json
        import main_thread, threads
        heatline.start(off=True, sampling_interval={INTERVAL})
        threads.python_worker(3_000_000)   # paused from the start
        heatline.resume()
        main_thread.python_loop()
        heatline.pause()
        main_thread.sleep_phase()          # paused
        heatline.resume()
        main_thread.hash_buffer(b"\\x01" * 300_000_000)
        print(json.dumps(heatline.stop().data))
    """, run_python=run_python, env=_truth_env(tmp_path))
    truth = _truth(tmp_path)
    got = test_accuracy.measured(out)
    _check({k: truth[k] for k in ("python_loop", "hash_buffer")}, out)
    for paused in ("python_worker", "sleep_phase"):
        charged = sum(got.get(paused, {}).get(k, 0)
                      for k in ("python_s", "native_s", "system_s", "cpu_wait_s"))
        # Unpaused, all of its ~0.5 s would be charged here. A tick that had begun just before
        # pause() may still land on the first paused line (the engine checks the flag, then
        # walks the stack): one tick, which charges at most the longest gap between ticks, read
        # up to a tick's duration late (both this run's own figures: a loaded machine stretches
        # them, and the profile says by how much).
        one_tick = out["max_sample_gap_s"] + out["max_tick_s"]
        assert charged <= one_tick, (paused, charged, one_tick, truth[paused]["wall_s"])


class ApiRun(test_memory_accuracy.Run):
    """A memory target profiled with heatline.start()/stop() around its main()."""

    def record(self, truth_path, profile_path):
        name = os.path.splitext(os.path.basename(self.path))[0]
        program = profile_path.parent / "api_program.py"
        program.write_text(textwrap.dedent(f"""
            import sys
            sys.path.insert(0, {TARGETS!r})
            import heatline
            import {name} as target
            heatline.start(memory_sampling_window={self.window})
            target.main()
            heatline.stop().save({str(profile_path)!r})
        """))
        result = test_memory_accuracy.subprocess.run(
            [sys.executable, str(program)], capture_output=True, text=True, timeout=600,
            env=test_memory_accuracy._env({"HEATLINE_TRUTH": str(truth_path)}), check=False,
        )
        assert result.returncode == 0, result.stderr


@pytest.fixture(scope="module")
def api_memory_run(tmp_path_factory):
    pytest.importorskip("numpy")
    return ApiRun("memory.py", tmp_path_factory.mktemp("api_memory"), test_memory_accuracy.WINDOW)


@pytest.mark.parametrize("check", [
    "test_lines_allocating_10_mb_are_within_10_percent_python_and_native",
    "test_copy_volume_is_within_15_percent",
    "test_planted_leaks_are_flagged_and_nothing_else",
    "test_peak_at_is_the_spike_line_when_it_happened",
])
def test_memory_in_a_running_interpreter_meets_the_cli_criteria(api_memory_run, check):
    """Native memory included: the GOT redirection works when the engine starts inside a
    running interpreter (numpy loaded long before). The memory accuracy tests' own checks."""
    function = getattr(test_memory_accuracy, check)
    arguments = [lambda name: api_memory_run]
    if "name" in function.__code__.co_varnames[: function.__code__.co_argcount]:
        arguments.append("memory.py")
    function(*arguments)
    assert api_memory_run.profile["memory"]["redirected_slots"] > 0


def test_memory_allocated_before_start_is_not_counted(tmp_path, run_python):
    np = pytest.importorskip("numpy")
    del np
    out = _program(tmp_path, """
        import json
        import numpy as np
        before = np.ones(64 * 2**20 // 8)        # 64 MiB, allocated before start()
        heatline.start()
        del before                                # freed while profiling
        after = np.ones(8 * 2**20 // 8)           # 8 MiB, still alive at stop()
        p = heatline.stop()
        print(json.dumps({"peak": p.peak_bytes, "memory": p.data["memory"],
                          "leaks": len(p.leaks()),
                          "lines": [l._asdict() for l in p.lines()]}))
    """, run_python=run_python)
    mib = 2**20
    assert 8 * mib <= out["peak"] < 10 * mib, out["peak"]
    assert out["memory"]["freed_bytes"] < 2 * mib  # the 64 MiB free is ignored
    assert 8 * mib <= out["memory"]["live_bytes_at_end"] < 10 * mib
    assert out["leaks"] == 0
    for line in out["lines"]:
        assert line["growth_bytes"] >= 0 and line["peak_bytes"] >= 0, line
    (alloc,) = [line for line in out["lines"] if "after = " in line["source"]]
    # The array exactly (8 MiB is over the sampling window), plus at most a few sampled
    # small native allocations.
    assert 8 * mib <= alloc["alloc_native_bytes"] < 8 * mib + 512 * 1024, alloc


def test_misuse_raises_heatline_error(tmp_path, run_python):
    out = _program(tmp_path, """
        import json
        errors = {}
        def attempt(name, call):
            try:
                call()
            except heatline.HeatlineError as exc:
                errors[name] = str(exc)
        attempt("stop without start", heatline.stop)
        heatline.start(cpu_only=True)
        attempt("start twice", heatline.start)
        with_block = heatline.profile()
        attempt("with inside start", with_block.__enter__)
        heatline.stop()
        attempt("stop twice", heatline.stop)
        attempt("unknown option", lambda: heatline.start(intervall=0.1))
        attempt("bad window", lambda: heatline.start(memory_sampling_window="1x"))
        attempt("bad interval", lambda: heatline.start(sampling_interval=5))
        attempt("bad flag", lambda: heatline.start(cpu_only="yes"))
        print(json.dumps({"errors": errors, "running": heatline.is_running()}))
    """, run_python=run_python)
    errors = out["errors"]
    assert set(errors) == {"stop without start", "start twice", "with inside start",
                           "stop twice", "unknown option", "bad window", "bad interval",
                           "bad flag"}, errors
    assert "call heatline.start() first" in errors["stop without start"]
    assert "already profiling" in errors["start twice"]
    assert "intervall" in errors["unknown option"]
    assert "memory_sampling_window" in errors["bad window"] and "'1x'" in errors["bad window"]
    assert "sampling_interval" in errors["bad interval"]
    assert out["running"] is False


def test_decorating_a_generator_is_an_error(tmp_path, run_python):
    path = tmp_path / "program.py"
    path.write_text("import heatline\n@heatline.profile\ndef g():\n    yield 1\n")
    result = run_python(str(path), text=True)
    assert result.returncode == 1
    assert "heatline.HeatlineError" in result.stderr or "HeatlineError" in result.stderr
    assert "generator" in result.stderr


def test_fork_while_started(tmp_path, run_python):
    """The child is not profiling (its engine is stopped) and may start its own profile; the
    parent's profile goes on and is the parent's."""
    out = _program(tmp_path, """
        import json, os
        heatline.start(sampling_interval=0.002)
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                heatline.stop()
            except heatline.HeatlineError:
                code += 1
            heatline.start(sampling_interval=0.002)
            total = sum(i * i for i in range(300_000))  # child line
            if heatline.stop().lines():
                code += 2
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        total = sum(i * i for i in range(300_000))  # parent line
        p = heatline.stop()
        print(json.dumps({"child": os.waitstatus_to_exitcode(status),
                          "sources": [l.source.strip() for l in p.lines() if l.time_s]}))
    """, run_python=run_python)
    assert out["child"] == 3
    assert any("# parent line" in source for source in out["sources"]), out
    assert not any("# child line" in source for source in out["sources"]), out


def test_import_stays_cheap_and_pause_resume_without_a_profile_do_nothing(run_python):
    result = run_python("-c", (
        "import sys, heatline\n"
        "heatline.pause(); heatline.resume()\n"
        "print(sorted(m for m in sys.modules if m.startswith('heatline')))"
    ), text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "['heatline', 'heatline._version']"


@pytest.mark.parametrize("enabled", [True, False])
def test_stop_runs_no_garbage_collection_and_leaves_the_collector_as_it_was(run_python, enabled):
    # With a threshold of 1, every container made sets off a collection: building this
    # profile set off about 1,500 (after `import torch` a full collection walks a million
    # objects: 90 ms of the end). Only the few containers stop() makes before it turns the
    # collector off (its call, the pause itself) may still do so. The program's own
    # collections go on before stop() and after it.
    result = run_python("-c", (
        "import gc, heatline\n"
        "seen = []\n"
        "gc.callbacks.append(lambda phase, info: phase == 'start' and seen.append(1))\n"
        f"{'' if enabled else 'gc.disable()'}\n"
        "heatline.start()\n"
        "junk = [[i] for i in range(200_000)]\n"
        "gc.set_threshold(1)\n"
        "before = len(seen)\n"
        "profile = heatline.stop()\n"
        "during = len(seen) - before\n"
        "gc.set_threshold(700)\n"
        "print(during, gc.isenabled(), before > 0)\n"
    ), text=True)
    assert result.returncode == 0, result.stderr
    during, on_after, collected_before = result.stdout.split()
    assert int(during) <= 5
    assert on_after == str(enabled)
    assert collected_before == str(enabled)


# --- @profile under the heatline command -----------------------------------------------------

MARKED = """\
import builtins
import heatline

profile = getattr(builtins, "profile", lambda f: f)


def helper():
    return sum(i * i for i in range(200_000))


@profile
def marked():
    total = 0
    for i in range(400_000):
        total += i % 7
    return total + helper()


def unmarked():
    total = 0
    for i in range(400_000):
        total += i % 7
    return total


@heatline.profile
def also_marked():
    return sum(i % 3 for i in range(3_000_000))


for _ in range(3):
    marked(), unmarked()
if hasattr(builtins, "profile"):
    try:
        heatline.start()
    except heatline.HeatlineError as exc:
        print("start:", exc)
also_marked()
print("done")
"""


def _lines_of(source, first, last):
    """The 1-based numbers of source's lines from the one equal to first to the one starting
    with last."""
    start = source.index(first)
    end = next(i for i, text in enumerate(source) if i > start and text.startswith(last))
    return set(range(start + 1, end + 2))


def test_profile_decorator_under_the_cli_limits_the_profile(
    tmp_path, run_heatline, run_python, profile_path
):
    path = tmp_path / "marked.py"
    path.write_text(MARKED)
    result = run_heatline("-q", "--sampling-interval", "0.002", "-o", profile_path,
                          str(path), text=True)
    assert result.returncode == 0, result.stderr
    assert "start: this program runs under the heatline command" in result.stdout
    profile = json.loads(open(profile_path).read())
    assert list(profile["files"]) == [str(path)]
    entry = profile["files"][str(path)]
    # The decorated functions, with the code inside them (also_marked's generator
    # expression); not the functions they call (helper, its own generator expression) nor
    # the others. Judged by line: before 3.11 a generator expression's qualname is only
    # "<genexpr>", whichever function it is in.
    source = MARKED.splitlines()
    marked = _lines_of(source, "def marked():", "    return total + helper()")
    also_marked = _lines_of(source, "def also_marked():", "    return sum(i % 3 for")
    timed = {line["line"] for line in entry["lines"] if line["python_s"] + line["native_s"] > 0}
    assert timed <= marked | also_marked, sorted(timed)
    assert timed & marked and timed & also_marked, sorted(timed)
    functions = {f["qualname"] for f in entry["functions"]}
    assert {name.split(".")[0] for name in functions} <= {"marked", "also_marked", "<genexpr>"}
    assert sum(f["python_s"] + f["native_s"] for f in entry["functions"]) > 0
    # Under plain python: no builtin, no heatline; the getattr pattern runs it unchanged
    # (heatline.profile, without the command, profiles each call and reports on stderr).
    plain = run_python(str(path), text=True)
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout == "done\n"
    assert "also_marked" in plain.stderr


def test_profile_builtin_exists_only_under_the_cli(tmp_path, run_heatline, run_python):
    path = tmp_path / "probe.py"
    path.write_text("import builtins\nprint(hasattr(builtins, 'profile'))\n")
    assert run_heatline("-q", str(path), text=True).stdout == "True\n"
    assert run_python(str(path), text=True).stdout == "False\n"
