"""heatline diff on two profiles of a program whose phases change in known ways: a busy
loop goes from 0.4 s to 0.1 s, a sleep from 0.2 s to 0.8 s, and an edit moves every line two
lines down."""

import json
import re

import pytest

# Nothing checked here depends on the CPython version: runs on the main CPython and under ASan,
# not on every version (Makefile, suite-3.X).
pytestmark = pytest.mark.interpreter_independent

PROGRAM = '''import time
{header}

def spin(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def rest(seconds):
    time.sleep(seconds)


spin({spin})
rest({rest})
'''


def _profile(run_heatline, tmp_path, name, header, spin, rest):
    folder = tmp_path / name
    folder.mkdir()
    script = folder / "phases.py"
    script.write_text(PROGRAM.format(header=header, spin=spin, rest=rest))
    out = folder / "profile.json"
    result = run_heatline("-q", "-o", str(out), str(script), text=True)
    assert result.returncode == 0, result.stderr
    return str(out)


def _max_gap_s(path):
    with open(path, encoding="utf-8") as file:
        return json.load(file)["max_sample_gap_s"]


def test_diff_reports_known_phase_changes_and_fails_on_regression(run_heatline, tmp_path):
    before = _profile(run_heatline, tmp_path, "before", "", 0.4, 0.2)
    after = _profile(run_heatline, tmp_path, "after", "# moved\n# down\n# three", 0.1, 0.8)
    result = run_heatline("diff", before, after, text=True)
    assert result.returncode == 0, result.stderr
    text = result.stdout
    functions = text.split("Functions")[1].split("Lines")[0].splitlines()[2:]
    rows = [line.split() for line in functions if line.strip()]
    # How far a phase's time can be from its length in one run: the longest gap between samples
    # at each of its two ends (a loaded machine stretches it: the runs' own figures), in both
    # runs compared.
    slack = 2 * sum(_max_gap_s(path) for path in (before, after))
    # Largest change first: the sleep grew by about 0.6 s of system time, the loop shrank by
    # about 0.3 s of running time.
    assert rows[0][-2:] == ["rest", "(phases.py)"]
    assert 0.4 - slack < float(rows[0][0].rstrip("s")) < 0.8 + slack, (slack, text)
    assert 0.4 - slack < float(rows[0][3].rstrip("s")), (slack, text)
    assert rows[1][-2:] == ["spin", "(phases.py)"]
    assert -0.45 - slack < float(rows[1][0].rstrip("s")) < -0.15 + slack, (slack, text)
    # Lines are matched by function and source text across the edit (two lines down).
    match = re.search(r"phases\.py:(\d+) rest: time\.sleep\(seconds\)  \(was line (\d+)\)", text)
    assert match and int(match.group(1)) == int(match.group(2)) + 2, text
    # Nothing that carries real time is unmatched: only a line with a few samples (the loop's
    # `pass`, which one short run may catch and the other not) may show as new or gone, each
    # charged at most a few gaps between samples.
    unmatched = [line for line in text.splitlines() if line.endswith(("(new)", "(gone)"))]
    assert all(abs(float(line.split()[0].rstrip("s"))) < 0.05 + slack for line in unmatched), (
        slack, text)
    # Exit status for CI: the total grew by about 50 %.
    assert run_heatline("diff", "--fail-on-regression", "20", before, after).returncode == 1
    # ... and the sleep by about 0.6 s, 100 % of the before total: a 150 % allowance passes.
    assert run_heatline("diff", "--fail-on-regression", "150", before, after).returncode == 0
    # The other way round the total shrinks, and no function grows by 50 % of the total.
    assert run_heatline("diff", "--fail-on-regression", "50", after, before).returncode == 0


def test_diff_of_a_bad_file_is_a_one_line_error(run_heatline, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    result = run_heatline("diff", str(bad), str(bad), text=True)
    assert result.returncode == 1
    assert result.stderr.startswith("heatline: error: ") and result.stderr.count("\n") == 1


def test_module_level_line_after_a_function_is_named_by_its_real_function(run_heatline,
                                                                          tmp_path):
    """A module-level line below a def belongs to <module>, as the engine charged it, not to
    the function defined above it."""
    program = (
        "import time\n\ndef f():\n    end = time.process_time() + 0.1\n"
        "    while time.process_time() < end: pass\n\nf()\ntime.sleep({})\n"
    )
    paths = []
    for name, seconds in (("a", 0.2), ("b", 0.05)):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "p.py").write_text(program.format(seconds))
        out = folder / "p.json"
        assert run_heatline("-q", "-o", str(out), str(folder / "p.py")).returncode == 0
        paths.append(str(out))
    text = run_heatline("diff", *paths, text=True).stdout
    assert "p.py:8 <module>: time.sleep(" in text, text
    assert "f: time.sleep" not in text, text
