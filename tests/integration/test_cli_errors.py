"""Every bad input gives one `heatline: error: ...` line on stderr and a non-zero exit status,
never a traceback, and the program does not run."""

import json
import os

import pytest

from heatline.data import SCHEMA_VERSION


def assert_one_error_line(result, contains=""):
    stderr = result.stderr.decode()
    assert result.returncode != 0
    assert "Traceback" not in stderr
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("heatline: error: "), stderr
    assert contains in lines[0]
    assert result.stdout == b""  # in particular, the program did not run


@pytest.mark.parametrize("old, new", [
    ("--cpu-sampling-rate", "--sampling-interval (seconds between samples)"),
    ("--cpu-sampling-interval", "--sampling-interval"),
    ("--profile-interval", "--write-interval"),
    ("--rate", "--sampling-interval (seconds between readings: 0.01 is 100 a second)"),
])
def test_a_renamed_flag_names_its_new_name(run_heatline, program, old, new):
    for options in ([old, "0.01"], [f"{old}=0.01"]):
        result = run_heatline(*options, program("output.py"))
        assert_one_error_line(result)
        assert result.stderr.decode() == f"heatline: error: {old} is now {new}\n"
        assert result.returncode == 2 and result.stdout == b""


@pytest.mark.parametrize(
    "options",
    [
        ["--bogus"],
        ["-x"],
        ["--profile"],  # abbreviations are not accepted
        ["--sampling-interval", "0"],
        ["--sampling-interval", "1.5"],
        ["--sampling-interval", "fast"],
        ["--cpu-percent-threshold", "101"],
        ["--cpu-percent-threshold", "-1"],
        ["--sampling-interval=nan"],
        ["--memory-sampling-window", "inf"],
        ["--memory-sampling-window", "1e400"],
        ["--memory-sampling-window", "-inf"],
        ["--memory-sampling-window", "nan"],
    ],
    ids=lambda options: " ".join(options),
)
def test_bad_option_is_a_usage_error(run_heatline, program, options):
    result = run_heatline(*options, program("output.py"))
    assert_one_error_line(result)
    assert result.returncode == 2


@pytest.mark.parametrize("args", [[], ["-q"], ["run"], ["-o", "x.json"]], ids=repr)
def test_no_program_given(run_heatline, args, tmp_path):
    result = run_heatline(*args, cwd=str(tmp_path))
    assert_one_error_line(result, "no program to profile")
    assert result.returncode == 2


def test_option_missing_its_value(run_heatline):
    assert_one_error_line(run_heatline("-o"), "-o/--outfile")
    assert_one_error_line(run_heatline("-m"), "-m")


def test_missing_script_reports_like_python(run_heatline, tmp_path):
    result = run_heatline("nope.py", cwd=str(tmp_path))
    missing = os.path.join(str(tmp_path), "nope.py")
    assert_one_error_line(
        result, f"can't open file '{missing}': [Errno 2] No such file or directory"
    )
    assert result.returncode == 2


def test_directory_without_main_py(run_heatline, tmp_path):
    (tmp_path / "empty").mkdir()
    result = run_heatline("empty", cwd=str(tmp_path))
    assert_one_error_line(result, "can't find '__main__' module")


def test_missing_module(run_heatline):
    assert_one_error_line(
        run_heatline("-m", "no_such_module_for_heatline"),
        "No module named no_such_module_for_heatline",
    )


def test_stdin_as_program_is_refused(run_heatline):
    assert_one_error_line(run_heatline("-"), "stdin")


def test_syntax_error_is_printed_like_python_before_anything_runs(
    run_heatline, run_python, tmp_path
):
    script = tmp_path / "broken.py"
    script.write_text("print('never printed')\nprint(  (1,\n  2 3))\n")
    plain = run_python(str(script))
    result = run_heatline(str(script))
    assert result.returncode == plain.returncode == 1
    assert result.stderr == plain.stderr
    assert b"SyntaxError" in result.stderr and b"Traceback" not in result.stderr
    assert result.stdout == b""


def test_outfile_in_missing_directory(run_heatline, program, tmp_path):
    result = run_heatline("-o", str(tmp_path / "missing" / "p.json"), program("output.py"))
    assert_one_error_line(result, "does not exist")
    assert result.returncode == 2


def test_outfile_that_is_a_directory(run_heatline, program, tmp_path):
    assert_one_error_line(run_heatline("-o", str(tmp_path), program("output.py")), "is a directory")


@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() == 0,
    reason="needs POSIX permissions, which root ignores",
)
def test_outfile_in_unwritable_directory(run_heatline, program, tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        result = run_heatline("-o", str(locked / "p.json"), program("output.py"))
    finally:
        locked.chmod(0o700)
    assert_one_error_line(result, "not writable")


def test_view_missing_file(run_heatline, tmp_path):
    assert_one_error_line(run_heatline("view", str(tmp_path / "nope.json")), "no such file")


def test_view_file_that_is_not_json(run_heatline, tmp_path):
    path = tmp_path / "p.json"
    path.write_text("certainly not JSON")
    assert_one_error_line(run_heatline("view", str(path)), "invalid JSON")


@pytest.mark.parametrize(
    "content",
    [
        {"some": "other tool's JSON"},
        [1, 2, 3],
    ],
    ids=["object", "array"],
)
def test_view_json_that_is_not_a_profile(run_heatline, tmp_path, content):
    path = tmp_path / "p.json"
    path.write_text(json.dumps(content))
    assert_one_error_line(run_heatline("view", str(path)), "not a heatline profile")


def test_view_unknown_schema_version(run_heatline, tmp_path):
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"schema_version": 99, "heatline_version": "9.0"}))
    assert_one_error_line(run_heatline("view", str(path)), "schema version 99")


def test_view_profile_missing_keys(run_heatline, tmp_path):
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"schema_version": SCHEMA_VERSION, "heatline_version": "0.1.0"}))
    assert_one_error_line(run_heatline("view", str(path)), "missing required keys")


def test_view_bad_option_and_no_file(run_heatline):
    assert_one_error_line(run_heatline("view", "--bogus", "p.json"))
    assert_one_error_line(run_heatline("view"))
