"""The command-line reference and the README: docs/cli.md is what heatline.cli.reference
generates from the parsers and the option tables (so it names every option as --help does),
and the README stays short, opening with the commands a newcomer runs first."""

import os
import re

import pytest

from heatline import options as table
from heatline.cli import reference

# Nothing checked here depends on the CPython version: runs on the main CPython and under ASan,
# not on every version (Makefile, suite-3.X).
pytestmark = pytest.mark.interpreter_independent

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TABLES = {
    "RUN_OPTIONS": table.RUN_OPTIONS, "VIEW_OPTIONS": table.VIEW_OPTIONS,
    "DIFF_OPTIONS": table.DIFF_OPTIONS, "CHECK_OPTIONS": table.CHECK_OPTIONS,
    "DUMP_OPTIONS": table.DUMP_OPTIONS, "TOP_OPTIONS": table.TOP_OPTIONS,
    "ATTACH_OPTIONS": table.ATTACH_OPTIONS,
}


def _read(*path):
    with open(os.path.join(REPO, *path), encoding="utf-8") as f:
        return f.read()


def test_cli_md_is_what_the_generator_writes():
    assert _read("docs", "cli.md") == reference.render(), (
        "docs/cli.md is out of date: run `make docs`")


def test_every_flag_of_every_option_table_is_in_cli_md():
    text = _read("docs", "cli.md")
    missing = [
        f"{name}: {flag}"
        for name, options in TABLES.items()
        for option in options
        for flag in option.all_flags
        if not re.search(rf"`{re.escape(flag)}[` ]", text)
    ]
    assert not missing, missing
    assert sum(len(options) for options in TABLES.values()) > 30  # the tables were read


def test_every_option_of_every_command_is_documented_under_its_command():
    text = _read("docs", "cli.md")
    sections = dict(re.findall(r"^## heatline (\w+)\n(.*?)(?=^## |\Z)", text, re.M | re.S))
    assert set(sections) == {name for name, _ in reference.COMMANDS}
    for command, _ in reference.COMMANDS:
        parser = reference.parser_of(command)
        flags = {flag for action in parser._actions for flag in action.option_strings}
        documented = sections[command] + (sections["run"] if "applies too" in sections[command]
                                          else "")
        assert flags, command
        missing = [flag for flag in flags if f"`{flag}" not in documented]
        assert not missing, (command, missing)
    # A command's own options: under it, with its own help (top's --sampling-interval is not
    # the run's).
    top = table.TOP_OPTIONS[0]
    assert top.help.split(";")[0] in sections["top"]


def test_every_note_belongs_to_an_option_that_is_documented():
    used = set()
    reference.render(used)
    assert used == set(reference.NOTES), sorted(set(reference.NOTES) - used)


def test_the_parser_is_the_commands_own():
    # The parser comes from the command's own code path, not a copy: its prog and options.
    parser = reference.parser_of("dump")
    assert parser.prog == "heatline dump"
    assert {"--json", "--no-pause"} <= {f for a in parser._actions for f in a.option_strings}


def test_readme_is_short_and_opens_with_the_demo_and_the_test_suite():
    text = _read("README.md")
    lines = text.splitlines()
    assert len(lines) <= 300, f"README.md has {len(lines)} lines; at most 300"
    opening = "\n".join(lines[:25])
    block = re.search(r"```\n(.*?)```", opening, re.S)
    assert block, "README.md's first 25 lines have no command block"
    commands = [line.split("#")[0].strip() for line in block.group(1).splitlines()]
    commands = [command for command in commands if command]
    assert commands[:2] == ["make demo", "make test"], commands
    # CI runs the README's test command.
    ci = [line.strip() for line in _read(".ci", "run").splitlines()
          if line.strip() and not line.lstrip().startswith("#")]
    assert any(re.match(r"make test(\s|$)", line) for line in ci), ci


def test_readme_links_the_reference_and_the_guides():
    text = _read("README.md")
    for path in ("docs/cli.md", "docs/live-tools.md", "docs/integrations.md",
                 "docs/running.md", "docs/design.md", "docs/profile-format.md",
                 "docs/accuracy.md", "docs/overhead.md"):
        assert f"({path})" in text, path
        assert os.path.exists(os.path.join(REPO, path)), path
