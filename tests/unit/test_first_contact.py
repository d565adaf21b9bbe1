"""The first five minutes: README's opening, `make demo`'s own light install (saying what each
step does), a build without setuptools' deprecation warning, and the demo's one-line message
when numpy is missing."""

import os
import re
import shutil
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib


def _readme():
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as f:
        return f.read()


def test_readme_starts_short_with_the_two_commands_and_says_how_to_install():
    text = _readme()
    first_paragraph = text.split("\n\n")[1]
    sentences = re.split(r"(?<=\.)\s+", first_paragraph.replace("\n", " "))
    # The old opening was one sentence of nine lines (740 characters).
    assert max(len(sentence) for sentence in sentences) <= 300, sentences
    first_block = text.split("```")[1].strip().splitlines()
    assert first_block[0].startswith("make demo") and first_block[1].startswith("make test")
    install = text[text.index("## Installing it"):text.index("## Using it")]
    assert "pip install ." in install and "numpy" in install


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_demo_installs_only_what_the_demo_needs():
    # -n: print the commands without running them; -B: as on a fresh clone (nothing built).
    # --no-print-directory: under `make test` this make is nested, and would print "Leaving
    # directory" lines among the commands.
    commands = subprocess.run(["make", "--no-print-directory", "-n", "-B", "demo"], cwd=REPO,
                              capture_output=True, text=True, check=True).stdout
    installs = [line for line in commands.splitlines() if "pip install" in line]
    assert any("'.[demo]'" in line for line in installs), commands
    assert not any("test" in line for line in installs), commands  # no pytest, ruff, ...
    assert commands.strip().splitlines()[-1].endswith("bin/heatline examples/demo.py")
    with open(os.path.join(REPO, "pyproject.toml"), "rb") as f:
        project = tomllib.load(f)
    assert project["project"]["optional-dependencies"]["demo"] == ["numpy"]


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_demo_says_what_each_step_does_before_it_runs():
    """A first `make demo` builds its virtualenv for a minute or two with pip quiet: a line
    before each step says what it does (the long one, that it takes a while); pip stays quiet,
    so what it prints is those lines, not pages of pip's output."""
    commands = subprocess.run(["make", "--no-print-directory", "-n", "-B", "demo"], cwd=REPO,
                              capture_output=True, text=True, check=True).stdout.splitlines()
    steps = [i for i, line in enumerate(commands)
             if " -m venv " in line or "pip install" in line or "bin/heatline " in line]
    assert len(steps) == 4, commands
    for step in steps:
        said = commands[step - 1] if step else ""
        assert said.startswith('echo "make demo: '), (commands[step], said)
    build = next(i for i in steps if "'.[demo]'" in commands[i])
    said = commands[build - 1]
    assert "C engine" in said and "numpy" in said and "minute" in said, said
    assert all("--quiet" in commands[i] for i in steps if "pip install" in commands[i])


def test_license_is_an_spdx_string_with_a_setuptools_that_reads_it():
    with open(os.path.join(REPO, "pyproject.toml"), "rb") as f:
        project = tomllib.load(f)
    # The table form ({ text = "MIT" }) makes setuptools warn at every build; the string form
    # needs setuptools 77 or later.
    assert project["project"]["license"] == "MIT"
    assert "setuptools>=77" in project["build-system"]["requires"]


def test_demo_without_numpy_says_so_in_one_line():
    hide_numpy = ("import runpy, sys; sys.modules['numpy'] = None; "
                  "runpy.run_path(sys.argv[1], run_name='__main__')")
    result = subprocess.run([sys.executable, "-c", hide_numpy,
                             os.path.join(REPO, "examples", "demo.py")],
                            capture_output=True, text=True)
    assert result.returncode == 1
    assert result.stderr == ("examples/demo.py needs numpy: pip install numpy (make demo "
                             "installs it)\n")
