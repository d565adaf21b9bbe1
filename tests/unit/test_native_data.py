"""Native frames in the profile (heatline.data.native and its use by data/build.py,
data/merge.py and the terminal report), from synthetic engine snapshots."""

from heatline.data import native as native_report
from heatline.data.queries import thread_name
from heatline.renderers import terminal

from test_profile import MS, build, snapshot

LIB = "/usr/lib/libopenblas.so.0"


def _native(lines, addresses, **fields):
    return {"enabled": True, "error": 0, "reason": None, "threads_without": 0,
            "unsampled_ns": 0, "addresses": addresses, "lines": lines, **fields}


def _line(profile, path, number):
    return next(line for line in profile["files"][path]["lines"] if line["line"] == number)


def test_a_lines_native_functions_sum_its_addresses_by_function_largest_first():
    # lines are named by (file id, line): the snapshot's line 0 is work.py:2, its line 3 app.py:1
    addresses = [("dgemm_kernel", LIB), ("dgemm_kernel", LIB), ("memcpy", "/lib/libc.so.6"),
                 ("[unknown]", None)]
    lines = snapshot()["lines"]
    work, app = tuple(lines[0][:2]), tuple(lines[3][:2])
    snap = snapshot(native=_native([(*work, 0, 3 * MS), (*work, 2, 4 * MS), (*work, 1, 2 * MS),
                                    (*app, 3, 1 * MS)], addresses))
    profile = build(snap)
    assert _line(profile, "/src/work.py", 2)["native_functions"] == [
        {"symbol": "dgemm_kernel", "library": LIB, "seconds": 0.005},
        {"symbol": "memcpy", "library": "/lib/libc.so.6", "seconds": 0.004},
    ]
    assert _line(profile, "/src/app.py", 1)["native_functions"] == [
        {"symbol": "[unknown]", "library": None, "seconds": 0.001}]
    assert "native_functions" not in _line(profile, "/src/app.py", 4)
    assert not profile["warnings"]
    # a function's list sums its lines' (run has only work.py:2)
    run = next(f for f in profile["files"]["/src/work.py"]["functions"] if f["qualname"] == "run")
    assert run["native_functions"] == _line(profile, "/src/work.py", 2)["native_functions"]
    main = next(f for f in profile["files"]["/src/app.py"]["functions"] if f["qualname"] == "main")
    assert "native_functions" not in main


def test_without_native_frames_no_line_has_the_field():
    for native in (None, {"enabled": False, "addresses": [], "lines": []}):
        profile = build(snapshot(native=native))
        assert not any("native_functions" in line for entry in profile["files"].values()
                       for line in entry["lines"])


def test_more_than_twenty_functions_keep_the_top_twenty_and_sum_the_rest():
    cells = {(f"f{i}", LIB): (i + 1) * MS for i in range(25)}
    listed = native_report.function_list(cells)
    assert len(listed) == 21 and listed[0]["symbol"] == "f24"
    assert listed[-1] == {"symbol": "[other]", "library": None, "seconds": 0.015}  # 1+..+5 ms
    assert abs(sum(e["seconds"] for e in listed) - sum(cells.values()) / 1e9) < 1e-9


def test_merged_lists_sum_by_function():
    one = [{"symbol": "a", "library": LIB, "seconds": 0.5}]
    other = [{"symbol": "b", "library": LIB, "seconds": 0.7},
             {"symbol": "a", "library": LIB, "seconds": 0.4}]
    assert native_report.merged(one, other) == [
        {"symbol": "a", "library": LIB, "seconds": 0.9},
        {"symbol": "b", "library": LIB, "seconds": 0.7}]


def test_a_refused_event_is_a_warning_with_the_reason_and_the_fix():
    snap = snapshot(native=_native([], [], error=13, reason="refused", threads_without=2))
    warnings = [w for w in build(snap)["warnings"] if "native functions" in w]
    assert len(warnings) == 1
    assert "2 threads" in warnings[0] and "Permission denied" in warnings[0]
    assert "perf_event_paranoid" in warnings[0] and "PERFMON" in warnings[0]


def test_the_report_names_a_hot_lines_top_native_functions_with_shares():
    addresses = [("dgemm_kernel_HASWELL", LIB), ("memcpy", "/lib/x86_64/libc.so.6")]
    work = tuple(snapshot()["lines"][0][:2])
    snap = snapshot(native=_native([(*work, 0, 3 * MS), (*work, 1, 1 * MS)], addresses))
    text = terminal.render(build(snap)).decode()
    assert "native: dgemm_kernel_HASWELL (libopenblas) 75%, memcpy (libc) 25%" in text


def test_library_names_are_short():
    assert native_report.library_name("/x/numpy.libs/libscipy_openblas64_-1.so") == (
        "libscipy_openblas64_-1")
    assert native_report.library_name("[vdso]") == "[vdso]"
    assert native_report.library_name(None) == "anonymous"
    assert native_report.library_name(
        "/v/numpy/_core/_multiarray_umath.cpython-311-x86_64-linux-gnu.so") == "_multiarray_umath"
    assert native_report.library_name("/v/x/_speedups.abi3.so") == "_speedups"


def test_a_native_frame_of_heatlines_own_library_keeps_the_stack_above_it():
    """heatline's allocation hooks can be the sampled native function: that frame is left out,
    not taken for the launcher (which would drop the whole stack, and its time from every
    function's inclusive time)."""
    import os

    import heatline
    from heatline.data.queries import inclusive_times, stacks

    package = os.path.dirname(os.path.abspath(heatline.__file__))
    frames = [
        {"file": os.path.join(package, "__main__.py"), "name": "<module>",
         "qualname": "<module>", "line": 1},
        {"file": "/src/app.py", "name": "main", "qualname": "main", "line": 4},
        native_report.frame("patch_object", os.path.join(package, "_native.so")),
        native_report.frame("dgemm_kernel", LIB),
    ]
    profile = {"stacks": {"frames": frames, "dropped_s": 0.0, "entries": [
        {"stack": [0, 1, 2], "thread": 0, "python_s": 0.0, "native_s": 1.0, "system_s": 0.0},
        {"stack": [0, 1, 3], "thread": 0, "python_s": 0.0, "native_s": 2.0, "system_s": 0.0},
    ]}}
    assert [s.frames for s in stacks(profile)] == [[1], [1, 3]]
    inclusive = inclusive_times(profile)
    assert inclusive[("/src/app.py", "main")] == 3.0
    assert inclusive[(LIB, "dgemm_kernel")] == 2.0


def _other_threads_snapshot(python_tid):
    """Two threads without a thread state: 501 (a BLAS worker: 6 ms in dgemm_kernel, 2 ms in
    blas_thread_server, 1 ms no sample named) and python_tid (2 ms in memcpy, 1 ms unnamed)."""
    addresses = [("dgemm_kernel", LIB), ("blas_thread_server", LIB), ("memcpy", "/lib/libc.so.6")]
    native = _native([], addresses,
                     other_threads=[(501, "python", 9 * MS, 1 * MS),
                                    (python_tid, "python", 3 * MS, 1 * MS)],
                     other_charges=[(0, 0, 6 * MS), (0, 1, 2 * MS), (1, 2, 2 * MS)],
                     places=[(0, 0x7f0000001100), (0, 0x7f0000001200), (None, 0x1234)],
                     mappings=[(0x7f0000001000, 0x7f0000009000, 0x1000, LIB, "abcd")])
    return snapshot(native=native)


def test_a_thread_without_a_thread_state_is_a_thread_of_its_own_in_no_line():
    snap = _other_threads_snapshot(777)
    plain = build(snapshot())
    profile = build(snap)
    pythons = len(plain["threads"])
    blas, other = profile["threads"][pythons:]
    assert blas["name"] == blas["comm"] == "python" and blas["python"] is False
    # the reports call it after the library its named time mostly went to
    assert thread_name(profile, pythons) == "python (native thread 501, libopenblas)"
    assert blas["cpu_s"] == blas["unattributed_s"] == 0.009
    assert blas["native_functions"] == [
        {"symbol": "dgemm_kernel", "library": LIB, "seconds": 0.006},
        {"symbol": "blas_thread_server", "library": LIB, "seconds": 0.002}]
    assert thread_name(profile, pythons + 1) == "python (native thread 777, libc)"
    # in no line: the lines' totals are the Python threads' alone; the thread time is unattributed
    assert profile["totals"]["attributed_s"] == plain["totals"]["attributed_s"]
    assert profile["totals"]["unattributed_s"] == round(plain["totals"]["unattributed_s"]
                                                        + 0.012, 6)
    # its stacks: one native frame each, the unnamed time dropped
    frames = profile["stacks"]["frames"]
    mine = [(frames[e["stack"][0]]["name"], e["native_s"]) for e in profile["stacks"]["entries"]
            if e["thread"] == pythons]
    assert sorted(mine) == [("blas_thread_server", 0.002), ("dgemm_kernel", 0.006)]
    assert profile["stacks"]["dropped_s"] == round(plain["stacks"]["dropped_s"] + 0.002, 6)
    # where the function was: the address its samples charged most, in its library's mapping
    kernel = next(f for f in frames if f["name"] == "dgemm_kernel")
    assert kernel["address"] == 0x7f0000001100 and kernel["mapping_start"] == 0x7f0000001000
    assert kernel["mapping_offset"] == 0x1000 and kernel["build_id"] == "abcd"
    memcpy = next(f for f in frames if f["name"] == "memcpy")
    assert memcpy["address"] == 0x1234 and "mapping_start" not in memcpy


def test_a_python_threads_time_without_its_thread_state_stays_that_threads():
    """A thread seen while it had no thread state (starting or ending) whose id is a Python
    thread's is that thread: no entry of its own, its time that thread's, unattributed."""
    plain = build(snapshot())
    tid = plain["threads"][0]["native_id"]
    profile = build(_other_threads_snapshot(tid))
    assert len(profile["threads"]) == len(plain["threads"]) + 1  # the BLAS worker only
    thread = profile["threads"][0]
    assert thread["unattributed_s"] == round(plain["threads"][0]["unattributed_s"] + 0.003, 6)
    assert thread["cpu_s"] == round(plain["threads"][0]["cpu_s"] + 0.003, 6)
    assert "python" not in thread and "name" not in thread
    frames = profile["stacks"]["frames"]
    assert [(frames[e["stack"][0]]["name"], e["thread"]) for e in profile["stacks"]["entries"]
            if frames[e["stack"][-1]].get("native")] == [
        ("dgemm_kernel", len(plain["threads"])), ("blas_thread_server", len(plain["threads"])),
        ("memcpy", 0)]


def test_a_wrong_native_thread_or_frame_field_is_a_one_line_error():
    """validate() checks the optional fields of native threads and native frames, so that the
    renderers never meet them with a wrong type (the fuzz test of test_view found the pprof
    writer failing on a frame without mapping_limit)."""
    import copy

    import pytest

    from heatline.data import io as profile_io

    good = build(_other_threads_snapshot(777))
    profile_io.validate(good)
    frame = next(i for i, f in enumerate(good["stacks"]["frames"]) if "mapping_start" in f)
    thread = next(i for i, t in enumerate(good["threads"]) if t.get("python") is False)
    for where, key, value in (("frame", "mapping_limit", None), ("frame", "address", "0x10"),
                              ("frame", "build_id", 7), ("thread", "python", "no"),
                              ("thread", "name", 3), ("thread", "native_functions", [{}])):
        bad = copy.deepcopy(good)
        item = bad["stacks"]["frames"][frame] if where == "frame" else bad["threads"][thread]
        if value is None:
            del item[key]
        else:
            item[key] = value
        with pytest.raises(profile_io.ProfileError) as error:
            profile_io.validate(bad)
        assert "\n" not in str(error.value) and key in str(error.value)


PYLIB = "/usr/lib/libpython3.11.so.1.0"


def test_the_interpreters_samples_are_no_native_function_and_the_rest_keep_the_time():
    """Samples in the eval loop are the thread running bytecode: left out of a line's list,
    their time split among its native functions in proportion (the list still sums to the
    native time the samples covered); libpython's other functions are native work and stay.
    A line whose samples are all the interpreter's has no list. Stacks alike."""
    addresses = [("_PyEval_EvalFrameDefault", PYLIB), ("list_sort_impl", PYLIB),
                 ("dgemm_kernel", LIB), ("_PyEval_EvalFrameDefault", "/usr/bin/python3.11"),
                 ("_PyEval_EvalFrameDefault", LIB)]  # a library's own function of that name
    lines = snapshot()["lines"]
    work, app = tuple(lines[0][:2]), tuple(lines[3][:2])
    snap = snapshot(native=_native([(*work, 0, 4 * MS), (*work, 1, 3 * MS), (*work, 2, 1 * MS),
                                    (*app, 3, 2 * MS)], addresses,
                                   stacks=[(0, 0, 4 * MS), (0, 1, 3 * MS), (0, 2, 1 * MS)]))
    profile = build(snap)
    assert _line(profile, "/src/work.py", 2)["native_functions"] == [
        {"symbol": "list_sort_impl", "library": PYLIB, "seconds": 0.006},
        {"symbol": "dgemm_kernel", "library": LIB, "seconds": 0.002},
    ]
    assert "native_functions" not in _line(profile, "/src/app.py", 1)
    names = {f["name"] for f in profile["stacks"]["frames"] if f.get("native")}
    assert names == {"list_sort_impl", "dgemm_kernel"}
    assert native_report.is_interpreter("_PyEval_EvalFrameDefault.cold", "/usr/bin/python3.11")
    assert native_report.is_interpreter("_TAIL_CALL_LOAD_FAST", PYLIB)
    assert not native_report.is_interpreter("_PyEval_EvalFrameDefault", LIB)
    assert not native_report.is_interpreter("PyObject_Malloc", PYLIB)


def test_merging_lists_keeps_one_other_entry_last():
    one = [{"symbol": f"f{i}", "library": LIB, "seconds": 0.1 + i / 100} for i in range(20)]
    one.append({"symbol": "[other]", "library": None, "seconds": 5.0})
    other = [{"symbol": "g", "library": LIB, "seconds": 0.01},
             {"symbol": "[other]", "library": None, "seconds": 1.0}]
    merged = native_report.merged(one, other)
    assert [e["symbol"] for e in merged].count("[other]") == 1
    assert merged[-1] == {"symbol": "[other]", "library": None, "seconds": 6.01}


def test_the_functions_past_the_top_are_other_functions_last_in_the_html_table():
    """The "[other]" entries of many lines sum to more than any one function: the HTML table
    shows them last, as "other functions", in no library; the terminal alike."""
    from heatline.renderers import html

    addresses = [(f"f{i}", LIB) for i in range(25)]
    work = tuple(snapshot()["lines"][0][:2])
    snap = snapshot(native=_native([(*work, i, (30 - i) * MS) for i in range(25)], addresses))
    profile = build(snap)
    listed = _line(profile, "/src/work.py", 2)["native_functions"]
    assert listed[-1]["symbol"] == "[other]" and listed[-1]["seconds"] > listed[0]["seconds"]
    rows = html.page_data(profile)["native"]
    assert rows[0][0] == "f0" and rows[-1][:3] == ["other functions", "", 0.04]
    line = {"native_functions": [{"symbol": "[other]", "library": None, "seconds": 3.0},
                                 {"symbol": "f0", "library": LIB, "seconds": 1.0}]}
    assert terminal._native_functions(line) == (
        "native: f0 (libopenblas) 25%, other functions 75%")
    assert "(anonymous)" not in terminal._native_functions(line)


def test_the_report_shortens_cxx_names():
    short = terminal.short_symbol
    assert short("unsigned long partition_unrolled<avx2_vector<double>, Comparator<avx2_vector"
                 "<double>, false>, 8, double>(double*, unsigned long, unsigned long, double, "
                 "double*, double*) [clone .part.0] [clone .constprop.0]") == (
        "partition_unrolled<…>(…)")
    assert short("void np::qsort_simd::QSort_X86_V3<double>(double*, long)") == (
        "np::qsort_simd::QSort_X86_V3<…>(…)")
    assert short("std::vector<int, std::allocator<int> >::push_back(int const&)") == (
        "std::vector<…>::push_back(…)")
    assert short("std::basic_ostream<char, std::char_traits<char> >& std::operator<< "
                 "<std::char_traits<char> >(std::basic_ostream<char, std::char_traits<char> "
                 ">&, char const*)") == "std::operator<< <…>(…)"
    assert short("foo::operator()(int) const") == "foo::operator()(…) const"
    assert short("(anonymous namespace)::helper(int)") == "(anonymous namespace)::helper(…)"
    assert short("operator new(unsigned long)") == "operator new(…)"
    assert short("A::operator int() const") == "A::operator int() const"
    assert short("dgemm_kernel_HASWELL") == "dgemm_kernel_HASWELL"
    assert short("x" * 60) == "x" * 47 + "…"
