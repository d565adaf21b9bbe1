"""data/summary.py's rules on profiles made by hand: what each names, and the edges of its
thresholds (the rules on real programs: tests/integration/test_summary.py)."""

import copy

import pytest

from heatline import data
from heatline.data import summary
from heatline.data.summary import summarise

# Nothing checked here depends on the CPython version: runs on the main CPython and under ASan,
# not on every version (Makefile, suite-3.X).
pytestmark = pytest.mark.interpreter_independent

PROGRAM = "/src/app.py"
LIB = "/usr/lib/python3.11"
INTERVAL = 0.01


def _profile(entries, sources=None, threads=2, elapsed=10.0, **extra):
    """A profile from stack entries (thread, [(file, qualname, line), ...] outermost first,
    python_s, native_s, system_s): a file's lines are the innermost /src/ frames' lines."""
    sources = sources or {}
    frames, index, rows, lines = [], {}, [], {}
    for thread, stack, python, native, system in entries:
        positions = []
        for file, qualname, line in stack:
            key = (file, qualname, line)
            if key not in index:
                index[key] = len(frames)
                frames.append({"file": file, "name": qualname.split(".")[-1],
                               "qualname": qualname, "line": line})
            positions.append(index[key])
        rows.append({"stack": positions, "thread": thread, "python_s": python,
                     "native_s": native, "system_s": system})
        user = [frame for frame in stack if frame[0].startswith("/src/")]
        if user:
            file, qualname, line = user[-1]
            into = lines.setdefault((file, line), {
                "line": line, "source": sources.get(line, f"line_{line}()"),
                "function": qualname, "python_s": 0.0, "native_s": 0.0, "system_s": 0.0,
                "growth_bytes": 0, "peak_bytes": 0, "copy_bytes": 0, "timeline": [],
                "leak": None})
            into["python_s"] += python
            into["native_s"] += native
            into["system_s"] += system
    files = {}
    for (file, _), line in sorted(lines.items()):
        files.setdefault(file, {"lines": [], "functions": []})["lines"].append(line)
    totals = {key: sum(row[key] for row in rows) for key in ("python_s", "native_s", "system_s")}
    profile = {
        "program": PROGRAM, "elapsed_s": elapsed, "sampling_interval_s": INTERVAL,
        "threads": [{"native_id": 10 + i, "main": i == 0,
                     **{key: sum(r[key] for r in rows if r["thread"] == i)
                        for key in ("python_s", "native_s", "system_s")}}
                    for i in range(threads)],
        "totals": totals, "files": files, "stacks": {"frames": frames, "entries": rows},
        "memory": {"enabled": False}, "gpu": {"enabled": False}, "peak_bytes": 0,
        "memory_timeline": [], "peak_at": None,
    }
    profile.update(extra)
    return profile


def _rules(profile):
    return {item["rule"]: item for item in summarise(profile)}


def _main(line, *below):
    """The main thread's stack: the program's main() at ``line``, then library frames."""
    return [(PROGRAM, "<module>", 40), (PROGRAM, "main", line), *below]


def _waiting(below, source, seconds=3.0, busy=7.0):
    """The main thread blocked ``seconds`` at line 12 (``source``), busy ``busy`` at line 20."""
    return _profile([(0, _main(12, *below), 0.0, 0.0, seconds),
                     (0, _main(20), busy, 0.0, 0.0)], sources={12: source})


@pytest.mark.parametrize("below, source, named", [
    ([(f"{LIB}/subprocess.py", "Popen.wait", 1200)], "proc.wait()", "child processes"),
    ([(f"{LIB}/multiprocessing/process.py", "BaseProcess.join", 140)], "p.join()",
     "child processes"),
    ([(f"{LIB}/queue.py", "Queue.get", 171), (f"{LIB}/threading.py", "Condition.wait", 320)],
     "item = q.get()", "a queue (queue.Queue)"),
    ([(f"{LIB}/threading.py", "Thread.join", 1100)], "t.join()", "other threads (Thread.join)"),
    ([(f"{LIB}/threading.py", "Event.wait", 600)], "done.wait()",
     "another thread (threading.Event.wait)"),
    ([(f"{LIB}/threading.py", "Thread.start", 964), (f"{LIB}/threading.py", "Event.wait", 600)],
     "t.start()", "a new thread to start (Thread.start)"),
    ([(f"{LIB}/multiprocessing/pool.py", "Pool.map", 367)], "pool.map(f, xs)",
     "a pool (multiprocessing.pool)"),
    ([(f"{LIB}/concurrent/futures/_base.py", "Future.result", 451)], "f.result()",
     "futures (concurrent.futures)"),
    ([(f"{LIB}/multiprocessing/queues.py", "Queue.get", 103)], "r = results.get()",
     "another process (a multiprocessing queue, pipe or lock)"),
    ([(f"{LIB}/socket.py", "SocketIO.readinto", 706)], "body = response.read()", "network I/O"),
    ([(f"{LIB}/asyncio/base_events.py", "BaseEventLoop.run_forever", 600)],
     "asyncio.run(main())", "the asyncio event loop (I/O or timers)"),
    ([], "time.sleep(0.5)", "a sleep"),
    ([], "with self._lock:  # guarded", "a lock"),
    ([], "lock.acquire()", "a lock"),
    ([], "data = f.read()", "I/O"),
    ([], "os.waitpid(pid, 0)", "child processes"),
    ([(f"{LIB}/site-packages/thing/core.py", "Client.fetch", 88)], "client.fetch()",
     "Client.fetch (core.py)"),
    ([], "compute()", "a call on this line"),
    ([], "await loop.run_in_executor(None, work)", "a thread pool (awaited)"),
    ([], "data = await asyncio.to_thread(load)", "a thread pool (awaited)"),
    ([], "reply = await fut", "an awaited future (asyncio)"),
])
def test_what_the_main_thread_waits_on_is_named_in_the_programs_terms(below, source, named):
    item = _rules(_waiting(below, source))["main_wait"]
    assert item["text"].startswith("The main thread waits 30% of its time (3.0 s, imports "
                                   "left out): 3.0 s for " + named + " at app.py:12 `")
    assert (item["file"], item["line"]) == (PROGRAM, 12)


def test_the_gpu_synchronisation_is_named_only_where_gpu_data_exists():
    profile = _waiting([], "loss = out.item()")
    assert "for a call on this line" in _rules(profile)["main_wait"]["text"]
    profile["gpu"] = {"enabled": True, "devices": []}
    assert "for the GPU (a synchronisation)" in _rules(profile)["main_wait"]["text"]


def test_the_main_wait_needs_a_fifth_of_the_time_and_names_big_places_only():
    assert "main_wait" not in _rules(_waiting([], "time.sleep(1)", seconds=1.9, busy=8.1))
    assert "main_wait" in _rules(_waiting([], "time.sleep(1)", seconds=2.1, busy=7.9))
    # Two places: each named when it holds a quarter of the waiting.
    profile = _profile([(0, _main(12), 0.0, 0.0, 2.0), (0, _main(14), 0.0, 0.0, 0.6),
                        (0, _main(16), 0.0, 0.0, 0.2), (0, _main(20), 5.0, 0.0, 0.0)],
                       sources={12: "time.sleep(2)", 14: "f.read()", 16: "g.read()"})
    text = _rules(profile)["main_wait"]["text"]
    assert "2.0 s for a sleep at app.py:12" in text and "for I/O at app.py:14" not in text
    # Imports are left out of the main thread's time (and their waits are not named).
    importing = [(0, [(PROGRAM, "<module>", 1), ("<frozen importlib._bootstrap>",
                                                 "_find_and_load", 1176)], 0.0, 0.0, 50.0)]
    profile = _profile(importing + [(0, _main(12), 0.0, 0.0, 3.0), (0, _main(20), 7.0, 0, 0)],
                       sources={12: "time.sleep(3)"})
    assert "waits 30% of its time (3.0 s" in _rules(profile)["main_wait"]["text"]


def test_a_dataloader_wait_is_starvation_from_three_tenths_of_the_loop():
    loader = [(f"{LIB}/site-packages/torch/utils/data/dataloader.py",
               "_BaseDataLoaderIter.__next__", 733)]
    starved = _rules(_waiting(loader, "for x, y in loader:", seconds=3.1, busy=6.9))
    assert "main_wait" not in starved  # said once, by the starvation rule
    text = starved["dataloader_starvation"]["text"]
    assert text.startswith("The training loop is starved of data: the main thread waits for "
                           "DataLoader workers 31% of its time (3.1 s, imports left out) at "
                           "app.py:12 `for x, y in loader:`")
    fed = _rules(_waiting(loader, "for x, y in loader:", seconds=2.5, busy=7.5))
    assert "dataloader_starvation" not in fed
    assert "for DataLoader workers at app.py:12" in fed["main_wait"]["text"]


def _threads(system_share, threads=3, native=0.0, line_source="total += i"):
    """``threads`` threads running line 7 of /src/app.py, blocked there ``system_share`` of
    their time, plus the main thread in join()."""
    entries = [(0, _main(30, (f"{LIB}/threading.py", "Thread.join", 1100)), 0.0, 0.0, 2.0)]
    for thread in range(1, threads + 1):
        entries.append((thread, [(f"{LIB}/threading.py", "Thread.run", 990),
                                 (PROGRAM, "spin", 7)],
                        2.0 * (1 - system_share) - native, native, 2.0 * system_share))
    return _profile(entries, sources={7: line_source}, threads=threads + 1, elapsed=2.0)


def test_gil_contention_is_threads_blocked_on_lines_that_only_run_python():
    item = _rules(_threads(0.6))["gil_contention"]
    assert item["text"].startswith("GIL contention: 3 threads running Python wait 3.6 s for "
                                   "the GIL (60% of their time on pure-Python lines), most at "
                                   "app.py:7 `total += i`")
    assert (item["file"], item["line"]) == (PROGRAM, 7)
    assert "gil_contention" in _rules(_threads(0.16))
    assert "gil_contention" not in _rules(_threads(0.14))  # below 15% of their time
    assert "gil_contention" not in _rules(_threads(0.6, threads=1))  # nothing to contend with
    # A line whose running time is partly native calls something that may block itself.
    assert "gil_contention" not in _rules(_threads(0.6, native=0.2))
    # Waiting below a library frame (queue.get's own code) is not counted.
    entries = [(t, [(PROGRAM, "spin", 7), (f"{LIB}/queue.py", "Queue.get", 171)], 0.8, 0, 1.2)
               for t in (1, 2)]
    assert "gil_contention" not in _rules(_profile(entries, threads=3, elapsed=2.0))


def test_gil_contention_judges_a_line_over_all_the_threads_that_ran_it():
    """Six short threads with two samples of Python each on the line (under the three a line
    needs): together they ran it 0.12 s as Python, so it is a pure-Python line (judged thread by
    thread, each one's few samples would keep the rule silent on its own target)."""
    entries = [(0, _main(30, (f"{LIB}/threading.py", "Thread.join", 1100)), 0.0, 0.0, 0.6)]
    for thread in range(1, 7):
        entries.append((thread, [(f"{LIB}/threading.py", "Thread.run", 990),
                                 (PROGRAM, "spin", 7)], 2 * INTERVAL, 0.0, 0.08))
    item = _rules(_profile(entries, sources={7: "total += i"}, threads=7, elapsed=0.6))
    assert item["gil_contention"]["text"].startswith(
        "GIL contention: 6 threads running Python wait 480 ms for the GIL (80% of their time")
    # Threads that ran the line only as native calls are still not contending for the GIL.
    entries = [entries[0]] + [(t, stack, python / 2, python / 2, system)
                              for t, stack, python, _, system in entries[1:]]
    assert "gil_contention" not in _rules(_profile(entries, sources={7: "total += i"},
                                                   threads=7, elapsed=0.6))


def _workers(blocked=9.0, busy=1.0, work=(4.0, 4.0), split=0.75):
    """The main thread blocked ``blocked`` at line 12 on a queue and busy ``busy`` at line 20;
    one thread per ``work`` entry running that long in crunch() (defined at line 30): ``split``
    of it at line 31, the rest in a generator expression of crunch at line 33."""
    queue_wait = [(f"{LIB}/queue.py", "Queue.get", 171), (f"{LIB}/threading.py",
                                                          "Condition.wait", 320)]
    entries = [(0, _main(12, *queue_wait), 0.0, 0.0, blocked), (0, _main(20), busy, 0.0, 0.0)]
    run = [(f"{LIB}/threading.py", "Thread.run", 982)]
    for thread, seconds in enumerate(work, 1):
        entries.append((thread, [*run, (PROGRAM, "crunch", 31)], seconds * split, 0.0, 0.0))
        entries.append((thread, [*run, (PROGRAM, "crunch", 33),
                                 (PROGRAM, "crunch.<locals>.<genexpr>", 33)],
                        0.0, seconds * (1 - split), 0.0))
    profile = _profile(entries, sources={12: "item = results.get()", 31: "total += step(i)"},
                       threads=1 + len(work))
    profile["files"][PROGRAM]["functions"] = [{"qualname": "crunch", "first_line": 30}]
    return profile


def test_worker_threads_name_their_function_while_the_main_thread_waits():
    item = _rules(_workers())["worker_threads"]
    assert item["text"] == ("While the main thread waits, 2 other threads run 8.0 s (89% of "
                            "the running time), 100% of it in crunch (app.py:30), most at "
                            "app.py:31 `total += step(i)`.")
    assert (item["file"], item["line"]) == (PROGRAM, 31)
    one = _rules(_workers(work=(4.0,), split=0.25))["worker_threads"]
    assert one["text"].startswith("While the main thread waits, 1 other thread runs 4.0 s")
    assert "most at app.py:33" in one["text"]  # the comprehension's time is crunch's


def test_worker_threads_need_a_main_thread_waiting_half_its_time_and_half_the_work():
    assert "worker_threads" not in _rules(_workers(blocked=4.9, busy=5.1))
    assert "worker_threads" in _rules(_workers(blocked=5.1, busy=4.9))
    # The main thread's own running time is more than the other threads'.
    assert "worker_threads" not in _rules(_workers(blocked=9.0, busy=4.1, work=(2.0, 2.0)))
    assert "worker_threads" in _rules(_workers(blocked=9.0, busy=3.9, work=(2.0, 2.0)))
    # Five samples' worth (10 ms apart) of work at least.
    assert "worker_threads" not in _rules(_workers(blocked=1.0, busy=0.0, work=(0.02, 0.02)))
    assert "worker_threads" in _rules(_workers(blocked=1.0, busy=0.0, work=(0.03, 0.03)))


def _pool(busy, role="Pool worker"):
    processes = [{"pid": 1, "ppid": 0, "role": "main", "argv": ["app.py"], "exit": "exit",
                  "start_s": 0.0, "elapsed_s": 3.0, "cpu_s": 0.1, "python_s": 0.1,
                  "native_s": 0.0, "system_s": 2.9, "peak_bytes": 0}]
    own = {"1": _profile([(0, _main(12), 0.1, 0.0, 2.9)])}
    entries = [(0, _main(12), 0.1, 0.0, 2.9)]
    for number, seconds in enumerate(busy, 2):
        processes.append({**processes[0], "pid": number, "ppid": 1, "role": role,
                          "cpu_s": seconds, "python_s": seconds, "system_s": 0.0})
        worker = (0, [(PROGRAM, "work", 5)], seconds, 0.0, 0.0)
        own[str(number)] = _profile([worker], sources={5: "total += i % 7"})
        entries.append((number - 1, *worker[1:]))
    merged = _profile(entries, threads=len(entries), sources={5: "total += i % 7"},
                      processes=processes, process_profiles=own)
    for number, thread in enumerate(merged["threads"][1:], 2):
        thread["pid"] = number
    return merged


def test_pool_imbalance_is_the_busiest_worker_doing_three_times_the_others_mean():
    item = _rules(_pool([3.1, 1.0, 1.0]))["pool_imbalance"]
    assert item["text"].startswith("Pool imbalance: the busiest of 3 Pool workers (pid 2) did "
                                   "61% of the pool's work (3.1 s running, the others 1.0 s on "
                                   "average), most at app.py:5 `total += i % 7`")
    assert "pool_imbalance" not in _rules(_pool([2.9, 1.0, 1.0]))
    assert "pool_imbalance" not in _rules(_pool([3.1, 1.0, 1.0], role="fork child"))
    assert "pool_imbalance" in _rules(_pool([0.5, 0.0], role="ProcessPoolExecutor worker"))


def test_time_by_process_kind_names_each_kinds_busiest_line():
    text = _rules(_pool([1.0, 1.0, 1.0]))["processes"]["text"]
    assert text == ("CPU time by process: the main process 3% (100 ms, most at app.py:12 "
                    "`line_12()`), 3 Pool workers 97% (3.0 s, most at app.py:5 "
                    "`total += i % 7`).")
    assert "processes" not in _rules(_waiting([], "time.sleep(1)"))  # one process


def test_hottest_lines_say_their_kind_and_what_it_suggests():
    profile = _profile([(0, _main(12), 6.0, 0.0, 0.0), (0, _main(14), 0.2, 3.0, 0.0),
                        (0, _main(16), 0.4, 0.4, 5.0), (0, _main(18), 0.0, 0.5, 0.0)],
                       sources={12: "total += i", 14: "np.sort(a)", 16: "x = f(y)"})
    text = _rules(profile)["hot_lines"]["text"]
    assert text.startswith("The busiest line is app.py:12 `total += i` (57% of the running "
                           "time, 100% Python: the interpreter's own work on the line")
    assert "; next app.py:14 `np.sort(a)` (30%, 94% native)." in text
    assert "app.py:16" not in text  # its blocked time is not running time; 8% runs
    spread = _profile([(0, _main(line), 1.0, 0.0, 0.0) for line in range(10, 21)])
    assert "hot_lines" not in _rules(spread)  # eleven lines of 9% each


def _memory_profile(**line):
    fields = {"growth_bytes": 0, "peak_bytes": 0, "copy_bytes": 0, "timeline": [],
              "leak": None, **line}
    profile = _profile([(0, _main(12), 1.0, 1.0, 0.0), (0, _main(14), 2.0, 0.0, 0.0)],
                       sources={12: "data = bytes(buffer)"})
    profile["files"][PROGRAM]["lines"][0].update(fields)
    profile["memory"] = {"enabled": True, "copy_bytes": fields["copy_bytes"]}
    return profile


def test_copies_need_volume_repetition_and_running_time():
    mib = 1 << 20
    item = _rules(_memory_profile(copy_bytes=512 * mib, peak_bytes=64 * mib))["copy_volume"]
    assert item["text"].startswith("Copies: app.py:12 `data = bytes(buffer)` copied 512.0 MiB, "
                                   "8 times the most it held at once, in 2.0 s of running time")
    for fields in ({"copy_bytes": 63 * mib}, {"copy_bytes": 512 * mib, "peak_bytes": 129 * mib}):
        assert "copy_volume" not in _rules(_memory_profile(**fields))


def test_leaks_hold_a_mebibyte_and_imports_are_no_leaks():
    leak = {"likelihood": 0.9, "growth_bytes_per_s": 2 << 20}
    item = _rules(_memory_profile(growth_bytes=8 << 20, leak=leak))["leaks"]
    assert item["text"] == ("Likely leak: app.py:12 `data = bytes(buffer)` still holds 8.0 MiB "
                            "at the end, grown steadily (2.0 MiB/s).")
    assert "leaks" not in _rules(_memory_profile(growth_bytes=1 << 19, leak=leak))
    importing = _memory_profile(growth_bytes=8 << 20, leak=leak)
    importing["stacks"]["entries"][0]["stack"].append(len(importing["stacks"]["frames"]))
    importing["stacks"]["frames"].append({"file": "<frozen importlib._bootstrap>",
                                          "name": "_load", "qualname": "_load", "line": 1})
    assert "leaks" not in _rules(importing)


def test_the_peak_names_the_lines_holding_it_at_that_moment():
    mib = 1 << 20
    profile = _memory_profile(timeline=[[0.5, 80 * mib], [2.0, 0]])
    profile["peak_bytes"] = 100 * mib
    profile["memory_timeline"] = [[0.5, 60 * mib], [1.0, 100 * mib], [2.0, 10 * mib]]
    item = _rules(profile)["memory_peak"]
    assert item["text"] == ("Memory peaked at 100.0 MiB 1.0 s into the run, held by app.py:12 "
                            "`data = bytes(buffer)` 80.0 MiB.")
    profile["peak_bytes"] = 15 * mib
    assert "memory_peak" not in _rules(profile)


def test_low_gpu_utilisation_names_the_cause_on_the_cpu_side():
    device = {"index": 0, "name": "G", "samples": 10, "utilisation_pct": 29.0,
              "idle_share": 0.5}
    profile = _waiting([], "time.sleep(1)", seconds=3.0, busy=7.0)
    profile["gpu"] = {"enabled": True, "devices": [device]}
    item = _rules(profile)["gpu_utilisation"]
    assert item["text"] == ("GPU 0 is busy only 29% of the time (idle in 50% of its samples): "
                            "the CPU side does not keep it fed; the main thread waits at "
                            "app.py:12 `time.sleep(1)`.")
    for change in ({"utilisation_pct": 30.0}, {"samples": 9}):
        profile["gpu"]["devices"] = [{**device, **change}]
        assert "gpu_utilisation" not in _rules(profile)


def test_at_most_six_sentences_diagnoses_first_in_reading_order():
    profile = _pool([3.1, 0.1, 0.1])
    mib = 1 << 20
    line = profile["files"][PROGRAM]["lines"][0]
    line.update(copy_bytes=512 * mib, peak_bytes=64 * mib, growth_bytes=64 * mib,
                timeline=[[0.1, 64 * mib]], leak={"likelihood": 1.0, "growth_bytes_per_s": 1.0},
                python_s=3.0)
    profile["memory"] = {"enabled": True, "copy_bytes": 512 * mib}
    profile["peak_bytes"], profile["memory_timeline"] = 64 * mib, [[0.1, 64 * mib]]
    profile["gpu"] = {"enabled": True, "devices": [
        {"index": 0, "samples": 50, "utilisation_pct": 5.0, "idle_share": 0.9}]}
    rules = [item["rule"] for item in summarise(profile)]
    assert len(rules) == summary.MAX_SENTENCES
    assert rules == [rule for rule in summary.ORDER if rule in rules]
    assert {"gpu_utilisation", "pool_imbalance", "leaks", "main_wait"} <= set(rules)
    assert "memory_peak" not in rules  # the lowest rank goes first


def test_comments_are_not_quoted_and_long_source_is_cut():
    assert summary._without_comment('x = "# not a comment"  # a comment') == \
        'x = "# not a comment"  '
    assert summary._without_comment("s = 'it''s' # c") == "s = 'it''s' "
    profile = _waiting([], "time.sleep(1)  # " + "x" * 100)
    assert "`time.sleep(1)`." in _rules(profile)["main_wait"]["text"]
    long = "value = compute(" + ", ".join(f"argument_{i}" for i in range(20)) + ")"
    text = _rules(_waiting([], long))["main_wait"]["text"]
    assert f"`{long[:summary._SOURCE_WIDTH - 1].rstrip()}…`" in text


def test_a_profile_without_samples_or_threads_has_an_empty_summary():
    assert summarise(_profile([], threads=0)) == []


def test_the_summary_is_part_of_the_documented_shape(tmp_path):
    import test_profile

    built = test_profile.build()
    assert [item["rule"] for item in built["summary"]] == [
        item["rule"] for item in summarise(built)]
    data.validate(copy.deepcopy(built))
    older = copy.deepcopy(built)
    del older["summary"]
    data.validate(older)  # optional: older files lack it
    for bad in ([{"rule": "x", "text": 1, "file": None, "line": None}],
                [{"rule": "x", "text": "t", "file": None}], {"rule": "x"}):
        broken = dict(built, summary=bad)
        with pytest.raises(data.ProfileError, match="summary"):
            data.validate(broken)


def _waiting_for_cpus(running, waited, cpu_s, elapsed=10.0, cpus=2):
    """One process, its main thread running ``running`` s and waiting ``waited`` s for a CPU at
    line 20; ``cpu_s`` of CPU in all (its threads' running, those without Python too)."""
    profile = _profile([(0, _main(20), running, 0.0, 0.0)], elapsed=elapsed, cpu_s=cpu_s,
                       cpu_count=cpus)
    profile["totals"]["cpu_wait_s"] = waited
    profile["threads"][0]["cpu_wait_s"] = waited
    profile["files"][PROGRAM]["lines"][0]["cpu_wait_s"] = waited
    return profile


def test_oversubscription_is_named_from_a_fifth_of_the_time_waited_for_a_cpu():
    # CPU time 20 s and 5 s waiting over 10 s: 2.5 CPUs wanted of 2 (1.25 times); 20% waited.
    text = _rules(_waiting_for_cpus(20.0, 5.0, 20.0))["oversubscription"]["text"]
    assert "wanted 2.5 CPUs on average on a 2-CPU machine" in text, text
    assert "so 20% of their time (5.0 s) was spent waiting for one" in text, text
    assert "app.py:20" in text and "fewer processes or threads" in text, text
    # Just under either threshold: silent (under 1.25 times the CPUs, it is the machine's load).
    assert "oversubscription" not in _rules(_waiting_for_cpus(20.0, 4.9, 20.0))
    below = _rules(_waiting_for_cpus(19.0, 5.0, 19.0))
    assert "oversubscription" not in below
    assert "held by other programs" in below["busy_machine"]["text"]


def test_waits_for_a_cpu_of_a_profile_without_a_cpu_count_name_no_oversubscription():
    profile = _waiting_for_cpus(20.0, 10.0, 20.0)
    del profile["cpu_count"]
    rules = _rules(profile)
    assert "oversubscription" not in rules and "busy_machine" in rules


def _peers(shared, extra, roles=None, steps=10, wait=None):
    """A torchrun-like profile: the agent (main) and one peer per entry of ``shared`` (running
    seconds at the shared line, 20) with ``extra`` running seconds at line 30 for the same
    peer index, and ``wait`` (default: what the busiest left the others) blocked at the
    all_reduce line, 40; each peer marked ``steps`` steps of 1 s (None: no steps)."""
    roles = roles or [f"rank {i} (node {i // 2}, local rank {i % 2})" for i in range(len(shared))]
    sources = {20: "compute(batch)", 30: "extra_work()", 40: "dist.all_reduce(grads)",
               5: "import torch"}
    processes = [{"pid": 1, "ppid": 0, "role": "main", "argv": ["run.py"], "exit": "exit",
                  "start_s": 0.0, "elapsed_s": 12.0, "cpu_s": 0.1, "python_s": 0.1,
                  "native_s": 0.0, "system_s": 11.9, "peak_bytes": 0}]
    own = {"1": _profile([(0, _main(12), 0.1, 0.0, 11.9)])}
    entries = [(0, _main(12), 0.1, 0.0, 11.9)]
    busiest = max(s + e for s, e in zip(shared, extra))
    for number, (role, running, more) in enumerate(zip(roles, shared, extra), 2):
        blocked = busiest - running - more if wait is None else wait
        rows = [(0, [(PROGRAM, "<module>", 5)], 2.0, 0.4 * number, 0.0),  # import torch
                (0, [(PROGRAM, "main", 20)], running, 0.0, 0.0),
                (0, [(PROGRAM, "main", 40)], 0.0, 0.01, blocked)]
        if more:
            rows.append((0, [(PROGRAM, "main", 30)], more, 0.0, 0.0))
        cpu = sum(row[2] + row[3] for row in rows)
        processes.append({**processes[0], "pid": number, "ppid": 1, "role": role,
                          "cpu_s": cpu, "python_s": cpu, "system_s": blocked})
        mine = _profile(rows, sources=sources, threads=1)
        if steps is not None:
            mine["steps"] = {"source": "heatline.step", "count": steps,
                             "durations_s": [busiest / steps] * steps}
        own[str(number)] = mine
        entries += [(number - 1, *row[1:]) for row in rows]
    merged = _profile(entries, threads=len(entries), sources=sources, processes=processes,
                      process_profiles=own)
    for thread in merged["threads"][1:]:
        thread["pid"] = 2
    return merged


def test_the_straggler_rank_is_named_with_its_line_and_where_the_others_wait():
    item = _rules(_peers([0.5, 0.5, 0.5, 0.5], [0.0, 2.0, 0.0, 0.0]))["stragglers"]
    assert item["text"] == ("rank 1 is the straggler: 0.20 s per step at app.py:30 "
                            "`extra_work()` where the others spend none; ranks 0, 2, 3 wait in "
                            "all_reduce (app.py:40) 80% of the time.")
    assert (item["file"], item["line"]) == (PROGRAM, 30)
    # Without steps: its busy time in all.
    text = _rules(_peers([0.5, 0.5], [2.0, 0.0], steps=None))["stragglers"]["text"]
    assert text.startswith("rank 0 is the straggler: 2.0 s at app.py:30 `extra_work()` where the "
                           "others spend none; rank 1 waits in all_reduce (app.py:40) ")


def test_balanced_peers_and_differences_within_the_noise_name_no_straggler():
    # The import lines differ (0.4 s more each rank) and are left out.
    assert "stragglers" not in _rules(_peers([1.0, 1.0, 1.0, 1.0], [0.0] * 4))
    # 1.4 times the others: under STRAGGLER_RATIO.
    assert "stragglers" not in _rules(_peers([1.0, 1.0], [0.4, 0.0]))
    # Over the ratio, but 12 samples against 5: within 3 standard deviations of the counting.
    assert "stragglers" not in _rules(_peers([0.05, 0.05], [0.07, 0.0]))
    assert "stragglers" in _rules(_peers([0.05, 0.05], [0.5, 0.0]))
    # One rank alone has no peers; other roles are no peers.
    assert "stragglers" not in _rules(_peers([1.0], [2.0]))
    assert "stragglers" not in _rules(_peers([1.0, 1.0], [2.0, 0.0],
                                             roles=["python subprocess"] * 2))


def test_dask_or_ray_workers_are_peers_too():
    item = _rules(_peers([1.0, 1.0, 1.0], [0.0, 0.0, 3.0], roles=["Dask worker"] * 3,
                         steps=None, wait=0.0))["stragglers"]
    assert item["text"] == ("Dask worker pid 4 is the straggler: 3.0 s at app.py:30 "
                            "`extra_work()` where the others spend none.")


def test_time_by_process_counts_the_ranks_as_one_kind():
    text = _rules(_peers([1.0, 1.0], [0.0, 0.0]))["processes"]["text"]
    assert ", 2 ranks " in text, text


def _with_tasks(profile, tasks):
    profile["tasks"] = [{"name": name, "count": count, "wall_s": wall, "python_s": python,
                         "native_s": 0.0, "system_s": 0.0, "alloc_bytes": 0,
                         "lines": [{"file": PROGRAM, "line": line, "time_s": python}]}
                        for name, count, wall, python, line in tasks]
    return profile


def test_a_task_that_dominates_is_named_with_its_line_and_the_worker_that_ran_it():
    # Dask workers: worker pid 4 ran 3 s at line 30, the others none; two tasks
    profile = _with_tasks(
        _peers([1.0, 1.0, 1.0], [0.0, 0.0, 3.0], roles=["Dask worker"] * 3, steps=None, wait=0.0),
        [("extra", 12, 3.0, 3.0, 30), ("compute", 30, 3.0, 1.0, 20)])
    item = _rules(profile)["tasks"]
    assert item["text"] == ("Task extra took 75% of the workers' task time (12 runs, 0.25 s "
                            "each), most of it at app.py:30 `extra_work()`; Dask worker pid 4 "
                            "ran 100% of that.")
    assert (item["file"], item["line"]) == (PROGRAM, 30)
    # spread evenly over the workers: the task alone
    profile = _with_tasks(
        _peers([1.0, 1.0, 1.0], [0.0, 0.0, 0.0], roles=["Dask worker"] * 3, steps=None, wait=0.0),
        [("compute", 30, 3.0, 3.0, 20), ("load", 3, 0.3, 0.3, 40)])
    assert _rules(profile)["tasks"]["text"] == (
        "Task compute took 91% of the workers' task time (30 runs, 0.10 s each), most of it at "
        "app.py:20 `compute(batch)`.")


def test_no_task_dominates_no_sentence():
    profile = _with_tasks(
        _peers([1.0, 1.0], [0.0, 0.0], roles=["Ray worker"] * 2, steps=None, wait=0.0),
        [("a", 10, 1.0, 1.0, 20), ("b", 10, 1.0, 1.0, 30), ("c", 10, 1.0, 0.9, 40)])
    assert "tasks" not in _rules(profile)
    assert "tasks" not in _rules(_peers([1.0, 1.0], [0.0, 0.0]))
