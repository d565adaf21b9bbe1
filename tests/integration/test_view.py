"""The profile file written with -o and the terminal report (after a run and `heatline view`)."""

import os
import re
import subprocess
import sys

import pytest

from heatline import data as profile

ANSI = re.compile(rb"\x1b\[")
BUSY = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "targets",
                    "busy.py")
HOT_LINE = "total += i % 7"
IDLE_LINE = 'return "idle"'


@pytest.fixture(scope="module")
def saved_profile(tmp_path_factory):
    """busy.py profiled once for the whole module (-q: no report)."""
    path = str(tmp_path_factory.mktemp("view") / "busy.json")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "heatline",
            "-q",
            "-o",
            path,
            "--sampling-interval",
            "0.001",
            BUSY,
        ],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""  # -q: nothing from heatline
    return path


def test_outfile_holds_a_valid_profile_with_the_documented_keys(saved_profile):
    data = profile.load(saved_profile)
    assert set(profile.REQUIRED_KEYS) <= set(data)
    assert data["program"] == BUSY
    assert data["argv"] == [BUSY]
    assert data["samples"] > 0 and data["elapsed_s"] > 0
    assert set(data["totals"]) == {
        "python_s",
        "native_s",
        "system_s",
        "cpu_wait_s",
        "attributed_s",
        "unattributed_s",
    }
    assert any(thread["main"] for thread in data["threads"])
    assert set(data["stacks"]) == {"frames", "entries", "dropped_s"}


def test_outfile_lists_lines_with_cost_in_context_with_percentages(saved_profile):
    data = profile.load(saved_profile)
    busy = data["files"][BUSY]
    with open(BUSY) as source:
        expected = source.read().splitlines()
    costly = {
        line["line"] for line in busy["lines"]
        if line["python_s"] + line["native_s"] + line["system_s"] + line["cpu_wait_s"]
        or line["alloc_python_bytes"]
        or line["alloc_native_bytes"] or line["copy_bytes"] or line["freed_bytes"]
    }
    listed = {n for c in costly for n in range(c - 2, c + 3) if 1 <= n <= len(expected)}
    listed |= {f["first_line"] for f in busy["functions"]}
    assert [line["line"] for line in busy["lines"]] == sorted(listed)
    assert [line["source"] for line in busy["lines"]] == [expected[n - 1] for n in sorted(listed)]
    hot = next(line for line in busy["lines"] if HOT_LINE in line["source"])
    assert hot["python_pct"] + hot["native_pct"] + hot["system_pct"] + hot["cpu_wait_pct"] > 0
    assert IDLE_LINE not in [line["source"].strip() for line in busy["lines"]]  # far from cost
    all_pct = sum(
        f[kind + "_pct"] for f in data["files"].values() for kind in ("python", "native", "system")
    )
    assert 0 < all_pct <= 100.01
    assert "hot_loop" in {f["qualname"] for f in busy["functions"]}


def view(*args, env=None):
    full_env = {
        k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "NO_COLOR", "COLUMNS")
    }
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "heatline", "view", *args],
        check=False,
        capture_output=True,
        env=full_env,
        timeout=60,
    )


def test_view_renders_the_profile(saved_profile):
    result = view("--cpu-percent-threshold", "0", saved_profile)
    assert result.returncode == 0, result.stderr
    out = result.stdout.decode()
    assert BUSY in out
    assert HOT_LINE in out and "def hot_loop():" in out  # a line with time, in context
    assert IDLE_LINE not in out  # far from any line with cost: not listed
    assert "hot_loop" in out  # the function summary
    assert "samples" in out and "elapsed" in out  # the footer


def test_reduced_profile_hides_idle_lines(saved_profile):
    result = view("--reduced-profile", "--cpu-percent-threshold", "0.001", saved_profile)
    assert result.returncode == 0, result.stderr
    out = result.stdout.decode()
    assert HOT_LINE in out
    assert IDLE_LINE not in out
    # The def statement runs once as the module loads: a sample or a sampled allocation may
    # fall on it (busy.py says so), and then it is a line with a cost, shown. Only a def line
    # the profile charged nothing is checked to be hidden.
    with open(BUSY, encoding="utf-8") as file:
        [number] = [n for n, text in enumerate(file, 1) if text.startswith("def never_called")]
    lines = {line["line"]: line for line in profile.load(saved_profile)["files"][BUSY]["lines"]}
    charged = lines.get(number, {})
    if not any(charged.get(key) for key in ("python_s", "native_s", "system_s", "cpu_wait_s",
                                             "alloc_python_bytes", "alloc_native_bytes")):
        assert "def never_called" not in out


def test_no_color_means_no_escape_sequences_even_when_forced(saved_profile):
    result = view(saved_profile, env={"NO_COLOR": "1", "FORCE_COLOR": "1"})
    assert result.returncode == 0
    assert not ANSI.search(result.stdout)


def test_force_color_gives_colours(saved_profile):
    result = view(saved_profile, env={"FORCE_COLOR": "1"})
    assert result.returncode == 0
    assert ANSI.search(result.stdout)


def test_narrow_terminal_fits_the_width(saved_profile):
    result = view(saved_profile, env={"COLUMNS": "60"})
    assert result.returncode == 0, result.stderr
    lines = result.stdout.decode().splitlines()
    assert max(len(line) for line in lines) <= 60
    assert any(line.lstrip().startswith("Line") for line in lines)


def test_report_goes_to_stderr_after_the_run(run_heatline, run_python):
    plain = run_python(BUSY)
    result = run_heatline("--sampling-interval", "0.001", BUSY, text=True)
    assert result.returncode == 0
    assert result.stdout == plain.stdout.decode()
    assert "heatline profile of" in result.stderr and "hot_loop" in result.stderr


def test_report_says_so_when_nothing_was_sampled(run_heatline, program):
    # The first sample comes at least 0.5 s after the start: exits.py is over long before.
    result = run_heatline("--sampling-interval", "1", program("exits.py"), "0", text=True)
    assert result.returncode == 0
    assert "no samples were taken" in result.stderr
    assert "--sampling-interval" in result.stderr


HOSTILE = "\x1b[2J\x1b]0;owned\x07\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\\x9b1m\u202e"


def _hostile_profile(saved_profile, tmp_path, name, path):
    """saved_profile with `path` as the file's path and terminal control sequences in every
    string the report prints: the program, source, function names, leak locations, warnings."""
    import json

    with open(saved_profile, encoding="utf-8") as f:
        data = json.load(f)
    entry = data["files"].pop(BUSY)
    for line in entry["lines"]:
        line["source"] = line["source"] + " # " + HOSTILE
    hot = max(entry["lines"], key=lambda line: line["python_pct"] + line["native_pct"])
    hot.update(growth_bytes=5_000_000, leak={"likelihood": 0.9, "growth_bytes_per_s": 1e6})
    for function in entry["functions"]:
        function["qualname"] = HOSTILE + function["qualname"]
    data["files"][path] = entry
    data["program"] = path
    data["warnings"] = ["careful " + HOSTILE]
    data["memory"] = {
        "enabled": True, "sampling_window_bytes": 65536, "alloc_python_bytes": 10_000_000,
        "alloc_native_bytes": 0, "freed_bytes": 0, "live_bytes_at_end": 0, "copy_bytes": 0,
        "unattributed_alloc_bytes": 0, "unattributed_copy_bytes": 0, "samples": 10,
        "untracked_samples": 0, "redirected_slots": 1,
    }
    data["peak_at"] = {"file": path, "line": hot["line"], "t_s": 0.1}
    out = tmp_path / name
    out.write_text(json.dumps(data), encoding="utf-8")
    return str(out)


@pytest.mark.parametrize("color", [{"NO_COLOR": "1"}, {"FORCE_COLOR": "1"}])
def test_control_characters_in_a_profile_are_shown_not_sent_to_the_terminal(
    saved_profile, tmp_path, color
):
    path = "/tmp/evil\x1b[2J\x1b]0;title\x07dir/p.py"
    hostile = _hostile_profile(saved_profile, tmp_path, "hostile.json", path)
    result = view("--cpu-percent-threshold", "0", hostile, env={"COLUMNS": "200", **color})
    assert result.returncode == 0, result.stderr
    out = result.stdout
    # The only escape sequences left are the renderer's own colours (SGR: ESC [ digits m).
    assert not re.search(rb"\x1b(?!\[[0-9;]*m)", out)
    for raw in (b"\x07", b"\x9b", "\u202e".encode(), "\x9b".encode()):
        assert raw not in out
    text = re.sub(r"\x1b\[[0-9;]*m", "", out.decode())
    assert "/tmp/evil\\x1b[2J\\x1b]0;title\\x07dir/p.py" in text  # the path, visibly
    assert "\\x1b]8;;http://x" in text and "\\u202e" in text  # source, names, warnings
    assert "careful \\x1b[2J" in text
    assert text.count("\\x1b[2J") >= 5  # program, header, lines, functions, leak, warning


@pytest.mark.parametrize("path", ["/home/me/proj [draft]/p.py", "/home/me/a[/b]/p.py",
                                  "/x/[bold red]y[/bold red]/p.py"])
def test_brackets_in_paths_are_text_not_markup(saved_profile, tmp_path, path):
    hostile = _hostile_profile(saved_profile, tmp_path, "brackets.json", path)
    result = view("--cpu-percent-threshold", "0", hostile, env={"NO_COLOR": "1", "COLUMNS": "300"})
    assert result.returncode == 0, result.stderr
    out = result.stdout.decode()
    # The summary names places relative to the program's directory: p.py:N, as text.
    head, summary, rest = out.partition("\nSummary\n")
    summary, _, rest = rest.partition("\n\n")
    assert "p.py:" in summary
    shown = [line for line in (head + rest).splitlines() if "p.py" in line or ".py:" in line]
    # program line, file header, function, leak table, memory footer: the path whole in each
    assert len(shown) >= 5 and all(path in line for line in shown), shown
    assert "MarkupError" not in result.stderr.decode()


def _one_line_error(result):
    err = result.stderr.decode()
    assert result.returncode == 1, err  # as for every unusable profile
    assert err.startswith("heatline: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d["files"][BUSY].update(lines=[{}]),
        lambda d: d.update(totals={}),
        lambda d: d["files"][BUSY]["lines"][0].update(source=5),
        lambda d: d["files"][BUSY]["functions"][0].update(qualname=None),
        lambda d: d["files"][BUSY]["lines"][0].update(timeline=[[0.1]]),
        lambda d: d["files"][BUSY]["lines"][0].update(leak={"likelihood": "high"}),
        lambda d: d.update(peak_at={"file": 3}),
        lambda d: d["memory"].pop("sampling_window_bytes"),
        lambda d: d.update(elapsed_s=True),
        lambda d: d.update(warnings=[None]),
        lambda d: d["threads"].append("main"),
    ],
)
def test_view_of_a_malformed_profile_is_a_one_line_error(saved_profile, tmp_path, change):
    import json

    with open(saved_profile, encoding="utf-8") as f:
        data = json.load(f)
    change(data)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data), encoding="utf-8")
    _one_line_error(view(str(bad)))


def test_view_of_deeply_nested_json_is_a_one_line_error(tmp_path):
    bad = tmp_path / "deep.json"
    bad.write_text("[" * 100_000 + "]" * 100_000)
    _one_line_error(view(str(bad)))


def test_view_of_nan_is_a_one_line_error(saved_profile, tmp_path):
    with open(saved_profile, encoding="utf-8") as f:
        text = f.read()
    bad = tmp_path / "nan.json"
    assert '"elapsed_s":' in text
    bad.write_text(text.replace('"elapsed_s":', '"elapsed_s": NaN, "x":', 1))
    _one_line_error(view(str(bad)))


def test_view_reads_at_most_the_documented_size(tmp_path):
    # /dev/zero never ends: the read stops at the bound and says so.
    result = view("/dev/zero")
    _one_line_error(result)
    assert f"larger than {profile.MAX_PROFILE_BYTES // 2**20} MiB" in result.stderr.decode()


_WRONG_VALUES = [None, True, 0, -1, 2.5, 10**30, "x", "", [], {}, [[]], [1, 2, 3], {"a": 1}, [None]]


def _paths(value, prefix=()):
    """Every (container path, key) in a JSON tree."""
    if isinstance(value, dict):
        items = value.items()
    else:
        items = enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        yield prefix, key
        yield from _paths(item, (*prefix, key))


def test_mutated_profiles_give_a_one_line_error_or_a_report_never_a_traceback(saved_profile):
    """A fuzz test: a real profile with one field dropped or replaced by a value of the wrong
    type (a fixed seed per case), 400 times; validate() and every renderer in-process (`view`
    renders a saved profile to each format). The real profile differs from run to run, so each
    run tries other mutations: a failure names its case, to be kept as a unit test."""
    import copy
    import io
    import json
    import random

    from heatline.renderers import (
        View, chrome, collapsed, html, otlp, pprof, speedscope, terminal,
    )

    with open(saved_profile, encoding="utf-8") as f:
        original = json.load(f)
    paths = list(_paths(original))
    outcomes = {"error": 0, "rendered": 0}
    for case in range(400):
        rng = random.Random(case)
        data = copy.deepcopy(original)
        for _ in range(rng.choice((1, 1, 2, 3))):
            prefix, key = rng.choice(paths)
            try:
                container = data
                for step in prefix:
                    container = container[step]
                container[key]
            except (KeyError, IndexError, TypeError):
                continue
            if isinstance(container, dict) and rng.random() < 0.3:
                del container[key]
            else:
                container[key] = copy.deepcopy(rng.choice(_WRONG_VALUES))
        try:
            profile.validate(data, "p.json")
        except profile.ProfileError as exc:
            assert "\n" not in str(exc)
            outcomes["error"] += 1
            continue
        for reduced in (False, True):
            terminal.print_report(data, io.StringIO(), View(reduced=reduced, threshold_pct=1.0))
        for export in (html, pprof, speedscope, collapsed, chrome, otlp):
            export.render(data)
        outcomes["rendered"] += 1
    assert outcomes["error"] > 100 and outcomes["rendered"] > 10, outcomes


def test_hand_edited_fractional_byte_counts_still_export_to_pprof(saved_profile, tmp_path):
    # Found by the fuzz test above (case 417): bytes are integers in profiles heatline writes,
    # but the format allows any number, and pprof's encoder took only ints.
    import json

    from heatline.renderers import pprof

    with open(saved_profile, encoding="utf-8") as f:
        data = json.load(f)
    lines = [line for entry in data["files"].values() for line in entry["lines"]]
    for line in lines:
        line["alloc_native_bytes"] = 2.5
    profile.validate(data, "p.json")
    assert pprof.render(data)[:2] == b"\x1f\x8b"  # gzip


LONG_NAMES = '''\
import time


class IngestionPipelineStage:
    def accumulate_every_record_in_memory(self, rounds):
        kept = []
        for i in range(rounds):
            kept.append(bytearray(100_000))
            spin_for_a_little_while_doing_arithmetic(0.004)
        return kept


def spin_for_a_little_while_doing_arithmetic(seconds):
    end = time.perf_counter() + seconds
    total = 0
    while time.perf_counter() < end:
        total += 1
    return total


def main_entry_point_of_the_program_with_a_long_name():
    def nested_helper_with_an_equally_long_descriptive_name():
        return spin_for_a_little_while_doing_arithmetic(0.1)

    nested_helper_with_an_equally_long_descriptive_name()
    return IngestionPipelineStage().accumulate_every_record_in_memory(60)


KEPT = main_entry_point_of_the_program_with_a_long_name()
'''


@pytest.fixture(scope="module")
def long_names_profile(tmp_path_factory):
    """A profile of a program with long function names, memory on; the leak table is filled
    with every line that holds memory, so it has rows whatever the leak rule decides."""
    import json

    directory = tmp_path_factory.mktemp("narrow")
    script = directory / "ingest_pipeline_stage_with_long_file_name.py"
    script.write_text(LONG_NAMES)
    path = str(directory / "long.json")
    result = subprocess.run(
        [sys.executable, "-m", "heatline", "-q", "-o", path, "--sampling-interval", "0.001",
         str(script)],
        check=False, capture_output=True, timeout=120, cwd=str(directory),
    )
    assert result.returncode == 0, result.stderr
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    for line in data["files"][str(script)]["lines"]:
        if line["growth_bytes"] > 0 or line["alloc_python_bytes"] > 0:
            line["leak"] = line["leak"] or {"likelihood": 0.75, "growth_bytes_per_s": 1234567.0}
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f)
    return directory, path


@pytest.mark.parametrize("columns", ["80", None])  # None: not a terminal, rich's default width
def test_at_80_columns_every_function_name_and_leak_location_is_whole(
    saved_profile, long_names_profile, columns
):
    directory, path = long_names_profile
    env = {"COLUMNS": columns} if columns else {}

    def shown(file):  # as the report names a file: relative to the current directory if inside
        relative = os.path.relpath(file, directory)
        return file if relative.startswith("..") else relative

    for name in (path, saved_profile):
        data = profile.load(name)
        result = subprocess.run(
            [sys.executable, "-m", "heatline", "view", "--cpu-percent-threshold", "0", name],
            check=False, capture_output=True, timeout=60, cwd=str(directory),
            env={**{k: v for k, v in os.environ.items() if k not in ("COLUMNS", "FORCE_COLOR")},
                 "NO_COLOR": "1", **env},
        )
        assert result.returncode == 0, result.stderr
        out = result.stdout.decode()
        lines = out.splitlines()
        assert max(len(line) for line in lines) <= 80, [ln for ln in lines if len(ln) > 80]
        functions = [
            (f["qualname"], shown(file), f["first_line"])
            for file, entry in data["files"].items() for f in entry["functions"]
            if any(f[kind + "_pct"] for kind in ("python", "native", "system"))
        ]
        assert functions
        # The inclusive time is kept beside the total: a name too long for the room left
        # continues on the next row.
        header = next(line for line in lines if "total %" in line)
        assert "total %   incl %" in header, header
        for qualname, file, first_line in functions:
            assert any(qualname in line for line in lines), qualname
            assert any(f"{file}:{first_line}" in line for line in lines), (file, first_line)
        leaks = [
            f"{shown(file)}:{line['line']}"
            for file, entry in data["files"].items() for line in entry["lines"] if line["leak"]
        ]
        if name == path:
            assert len(leaks) >= 1
        leak_table = out[out.index("Likely leaks"):] if leaks else ""
        for location in leaks:
            assert any(location in line for line in leak_table.splitlines()), location


def test_view_as_json_of_a_profile_with_undecodable_argv_is_the_file_itself(tmp_path):
    """Undecodable bytes in argv are surrogates in the profile; a JSON writer that encodes them
    strictly dies of UnicodeEncodeError. One writer: the same bytes as -o."""
    path = tmp_path / "p.json"
    written = subprocess.run(
        [os.fsencode(sys.executable), b"-m", b"heatline", b"-q", b"-o", os.fsencode(path),
         os.fsencode(BUSY), b"\xff"],
        check=False, capture_output=True, timeout=60,
    )
    assert written.returncode == 0, written.stderr
    assert profile.load(str(path))["argv"][-1] == "\udcff"
    result = view("--format", "json", str(path))
    assert result.returncode == 0, result.stderr
    assert result.stderr == b""
    assert result.stdout == path.read_bytes()


def test_the_threshold_reaches_the_html_page(saved_profile, tmp_path):
    """--cpu-percent-threshold highlights lines in the HTML report as in the terminal (not a
    threshold of the page's own)."""
    from heatline.renderers.html import page_data

    out = tmp_path / "p.html"
    result = view("--cpu-percent-threshold", "37.5", "-o", str(out), saved_profile)
    assert result.returncode == 0, result.stderr
    page = out.read_text()
    assert '"hot_pct":37.5' in page
    assert "HOT = D.hot_pct" in page
    assert page_data(profile.load(saved_profile))["hot_pct"] == 1.0  # the default


IDLE_AND_BUSY = os.path.join(os.path.dirname(BUSY), "idle_and_busy.py")


def _report_at(data, columns, monkeypatch):
    """The terminal report of ``data`` as text at ``columns`` wide (rich reads COLUMNS)."""
    import io

    from heatline.renderers.terminal import print_report

    monkeypatch.setenv("COLUMNS", str(columns))
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    out = io.StringIO()
    print_report(data, out)
    return out.getvalue()


def test_a_narrow_function_table_keeps_the_columns_this_profile_fills(tmp_path, monkeypatch):
    """The split columns go by their value in the profile: a mostly idle program's system time
    outlives the native column (blank, or nearly, in every row) at every width; the first
    split column a narrowing table keeps is the kind with the largest share."""
    path = tmp_path / "idle.json"
    result = subprocess.run(
        [sys.executable, "-m", "heatline", "-q", "--cpu-only", "-o", str(path), IDLE_AND_BUSY],
        check=False, capture_output=True, timeout=120,
    )
    assert result.returncode == 0, result.stderr
    data = profile.load(str(path))
    functions = data["files"][IDLE_AND_BUSY]["functions"]
    largest = {kind: max(f[kind + "_pct"] for f in functions)
               for kind in ("python", "native", "system")}
    ranked = [f"{kind if kind != 'python' else 'Python'} %"
              for kind in sorted(largest, key=lambda k: -largest[k])]
    assert ranked[0] == "system %", largest  # what this program is: it sleeps most of the time
    widths_with_one_split_column = 0
    for columns in range(60, 161, 4):
        text = _report_at(data, columns, monkeypatch)
        header = next(line for line in text.splitlines() if "total %" in line)
        kept = [title for title in ("Python %", "native %", "system %") if title in header]
        # The kept split columns are the most valuable ones of this profile.
        assert set(kept) == set(ranked[:len(kept)]), (columns, header)
        widths_with_one_split_column += len(kept) == 1
    assert widths_with_one_split_column  # some width keeps exactly one: the system time


DEEP_LINE = os.path.join(os.path.dirname(BUSY), "deep_line.py")


@pytest.mark.parametrize("cpu_only", [False, True])
def test_the_hot_source_line_is_shown_whole_at_any_width(tmp_path, monkeypatch, cpu_only):
    """A long line deep in nested blocks, the program's hottest (and, with memory, its
    allocating one): at every width its source is in the file's table whole (dedented, wrapped,
    or on rows of its own), never cut to '…', and no row is wider than the terminal."""
    path = tmp_path / "deep.json"
    options = ["--cpu-only"] if cpu_only else []
    result = subprocess.run(
        [sys.executable, "-m", "heatline", "-q", *options, "-o", str(path), DEEP_LINE, "100"],
        check=False, capture_output=True, timeout=120,
    )
    assert result.returncode == 0, result.stderr
    data = profile.load(str(path))
    lines = data["files"][DEEP_LINE]["lines"]
    # The line the program spends its time on, found by its text: which line a short run's
    # samples make the hottest is up to them (one tick after a long gap charges the whole gap:
    # beside busy loops, `with self.lock:` can come first).
    hot = next(line for line in lines if "CACHE[(round_number, key)]" in line["source"])
    assert hot["python_pct"] + hot["native_pct"] > 0, hot
    for columns in (40, 60, 80, 100, 120, 160, 200):
        text = _report_at(data, columns, monkeypatch)
        rows = text.splitlines()
        assert max(len(row) for row in rows) <= columns, columns
        start = next(i for i, row in enumerate(rows) if row.startswith("Line"))
        end = next(i for i, row in enumerate(rows) if i > start and row.startswith("Functions"))
        table = "\n".join(rows[start:end])
        assert "…" not in table, (columns, table)
        assert "".join(hot["source"].split()) in "".join(table.split()), (columns, table)


CHILDREN_WIDE = os.path.join(os.path.dirname(BUSY), "children_wide.py")


def test_the_processes_table_keeps_every_pid_and_exit_whole_at_any_width(tmp_path, monkeypatch):
    """Children with long command lines, one ending in os._exit(0): at 60 to 200 columns each
    process's row has its PID and its exit whole (the command line is what gets shorter), no
    row is wider than the terminal, and the caption, where shown, breaks between words."""
    path = tmp_path / "children.json"
    result = subprocess.run(
        [sys.executable, "-m", "heatline", "-q", "--cpu-only", "-o", str(path), CHILDREN_WIDE],
        check=False, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stderr
    data = profile.load(str(path))
    processes = data["processes"]
    assert len(processes) == 4, processes
    assert sorted(p["exit"] for p in processes) == ["exit 0"] * 3 + ["os._exit(0)"], processes
    caption = ("Py s + nat s above CPU s: threads ready to run but waiting for a CPU (more "
               "runnable threads than cores) count as running; CPU s is only time on a CPU")
    for columns in (60, 80, 100, 200):
        text = _report_at(data, columns, monkeypatch)
        table = text[text.index("Processes ("):]
        table = table[:table.index("\n\n")]
        lines = table.splitlines()
        assert max(map(len, lines)) <= columns, table
        for process in processes:
            row = next((line for line in lines if line.split()[:1] == [str(process["pid"])]),
                       None)
            assert row is not None, (columns, process["pid"], table)
            assert re.search(rf"  {re.escape(process['exit'])}  ", row), (columns, row)
        if "Py s + nat s" in table:
            assert table[table.index("Py s + nat s"):].split() == caption.split(), table
