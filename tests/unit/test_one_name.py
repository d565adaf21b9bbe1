"""One name per quantity: the spellings the options had before they were renamed appear
nowhere in the project but in the table that turns them into a usage error (options.py's
RENAMED_FLAGS) and the tests of that error; an old flag or API keyword is refused naming the
new one."""

import re
import subprocess
from pathlib import Path

import pytest

from heatline import api, options

# Nothing checked here depends on the CPython version: runs on the main CPython and under ASan,
# not on every version (Makefile, suite-3.X).
pytestmark = pytest.mark.interpreter_independent

ROOT = Path(__file__).resolve().parents[2]

# Each renamed quantity's old spellings, as words: flags, Python names and C names.
OLD = re.compile(
    r"--cpu-sampling-rate|--cpu-sampling-interval|--profile-interval|profile_interval"
    r"|cpu_sampling_(?:rate|interval)|\brate_hz\b|TOP_RATE_HZ|top --rate|mem\.window\b"
    r"|totals\.window\b"
)
# Where the old spellings must stay: the table of renamed flags (and docs/cli.md's list of it),
# the tests of the error they give, and the log of past measurements.
ALLOWED = {"src/heatline/options.py", "tests/integration/test_cli_errors.py",
           "tests/integration/test_top.py", "tests/unit/test_one_name.py",
           "bench/results/NOTES.md", "docs/cli.md"}


def _project_files():
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"],
                            cwd=ROOT, capture_output=True, text=True, check=True).stdout
    for name in listed.splitlines():
        path = ROOT / name
        if path.suffix in (".py", ".c", ".h", ".md", ".toml", "") and path.is_file():
            yield name, path


def test_the_old_spellings_are_gone():
    found = []
    for name, path in _project_files():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            match = OLD.search(line)
            if match and name not in ALLOWED:
                found.append(f"{name}:{number}: {match.group()}")
            elif match and name == "src/heatline/options.py" and '":' not in line:
                found.append(f"{name}:{number}: {match.group()} (outside RENAMED_FLAGS)")
            elif match and name == "docs/cli.md" and "A flag of an earlier release" not in line:
                found.append(f"{name}:{number}: {match.group()} (outside the renamed list)")
    assert found == []


def test_the_check_finds_an_old_spelling():
    assert OLD.search("heatline --profile-interval 1 app.py")
    assert OLD.search("mem.window = w;") and not OLD.search("mem.sampling_window_bytes")


def test_every_renamed_flag_names_a_flag_that_exists():
    flags = {flag for table in (options.RUN_OPTIONS, options.TOP_OPTIONS) for option in table
             for flag in option.flags}
    for old, new in options.RENAMED_FLAGS.items():
        assert old not in flags
        assert new.split()[0] in flags


@pytest.mark.parametrize("old, new", [("cpu_sampling_interval", "sampling_interval"),
                                      ("cpu_sampling_rate", "sampling_interval"),
                                      ("profile_interval", "write_interval")])
def test_an_old_api_keyword_names_the_new_one(old, new):
    with pytest.raises(api.HeatlineError, match=f"option '{old}' is now '{new}'"):
        api.options_from_keywords({old: 0.01})
    assert api.options_from_keywords({new: 0.01})
