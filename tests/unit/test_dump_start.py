"""`heatline dump PID`'s start-up: its whole run is start-up, so what it imports is held here (no
re, json, argparse, typing, dataclasses, inspect or platform on the plain path), its plain
command lines are read as argparse reads them, its records and its escaping of control
characters behave as the standard modules they replace, and its quick exit loses no output.

The process read is this test's own (the command is its child, which Yama's ptrace_scope 1
allows), without stopping it (--no-pause)."""

import os
import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")

LAUNCHER = os.path.join(os.path.dirname(sys.executable), "heatline")
# What the plain path may not import (each costs a measurable part of the run:
# docs/design-live.md, "heatline dump"), unless the standard modules it needs do.
HEAVY = {"re", "json", "argparse", "typing", "dataclasses", "inspect", "platform", "gettext",
         "importlib.util"}


def _imported(*args):
    """The modules python imported running args, and what it wrote (-X importtime)."""
    result = subprocess.run([sys.executable, "-X", "importtime", *args],
                            capture_output=True, text=True, check=True)
    modules = {line.rpartition("|")[2].strip() for line in result.stderr.splitlines()
               if line.startswith("import time:")}
    return modules, result.stdout


def test_dump_imports_nothing_heavy():
    modules, text = _imported("-m", "heatline", "dump", "--no-pause", str(os.getpid()))
    assert f"Process {os.getpid()}:" in text
    assert "heatline.engine.dump" in modules and "heatline._native" in modules
    needed, _ = _imported("-c", "import runpy")  # python -m's own
    extra = modules & (HEAVY - needed)
    assert not extra, sorted(extra)


def test_the_heatline_command_imports_nothing_heavy():
    """The installed command, launcher included (pip's launcher for an entry point imports re
    first: scripts/heatline replaces it)."""
    if not os.path.isfile(LAUNCHER):
        pytest.skip(f"no heatline command {LAUNCHER} (heatline not installed into this venv)")
    modules, text = _imported(LAUNCHER, "dump", "--no-pause", str(os.getpid()))
    assert f"Process {os.getpid()}:" in text
    assert "heatline.engine.dump" in modules
    needed, _ = _imported("-c", "pass")  # the interpreter's start (site, .pth files)
    extra = modules & (HEAVY - needed)
    assert not extra, sorted(extra)


@pytest.mark.parametrize("args", [
    ["123"], ["--json", "123"], ["123", "--no-pause"], ["--no-pause", "--json", "7"],
    ["--json", "--json", "123"],
], ids=" ".join)
def test_a_plain_command_line_is_read_as_argparse_reads_it(args):
    from heatline.cli import dump

    plain = dump.parse_plainly(args)
    assert plain is not None
    assert plain == vars(dump.parser().parse_args(args))


@pytest.mark.parametrize("args", [
    [], ["-h"], ["--help"], ["12", "34"], ["x"], ["-5"], ["--js", "12"], ["--json=1", "12"],
    ["--bogus", "12"], ["--", "12"], ["١٢"],
], ids=" ".join)
def test_any_other_command_line_is_left_to_argparse(args):
    from heatline.cli import dump

    assert dump.parse_plainly(args) is None


def test_the_output_is_whole_and_a_closed_pipe_is_no_traceback(tmp_path):
    """dump ends its process without the interpreter's finalization: what it wrote is all
    there; and a reader that left (`| head`) gets no traceback."""
    out = tmp_path / "dump.json"
    with open(out, "w") as file:
        done = subprocess.run([sys.executable, "-m", "heatline", "dump", "--no-pause", "--json",
                               str(os.getpid())], stdout=file, stderr=subprocess.PIPE, text=True)
    assert done.returncode == 0, done.stderr
    import json

    assert json.loads(out.read_text())["pid"] == os.getpid()
    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run([sys.executable, "-m", "heatline", "dump", "--no-pause",
                               str(os.getpid())], stdout=write, stderr=subprocess.PIPE, text=True)
    finally:
        os.close(write)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr and "Exception" not in done.stderr, done.stderr


# ---- the records engine/dump.py declares (engine/records.py) --------------------------------


def test_records_behave_as_dataclasses():
    import dataclasses

    from heatline.engine import records

    def declare(module):
        @module.dataclass(frozen=True)
        class Point:
            x: int
            y: int = 2

        @module.dataclass
        class Bag:
            name: str
            items: list = module.field(default_factory=list)
            size: int = module.field(default=3)

        return Point, Bag

    for module in (records, dataclasses):
        Point, Bag = declare(module)
        assert Point(1) == Point(1, 2) == Point(x=1, y=2) and Point(1) != Point(1, 3)
        assert hash(Point(1)) == hash(Point(1, 2)) and Point(1) != (1, 2)
        assert repr(Point(1)).endswith("Point(x=1, y=2)")
        with pytest.raises(AttributeError):
            Point(1).x = 5
        one, two = Bag("a"), Bag("b")
        one.items.append(1)
        assert two.items == [] and one.size == 3 and Bag.size == 3 and Bag("a", [1]) == one
        one.size = 4
        with pytest.raises(TypeError):
            hash(one)
        with pytest.raises(TypeError):
            Bag()
        with pytest.raises(TypeError):
            Bag("a", bogus=1)
        with pytest.raises(TypeError):
            Bag("a", [], 3, 4)


# ---- control characters (renderers/visible.py) -------------------------------------------------

# The characters a terminal would act on, as a regular expression: the reference visible()
# is held to without one.
CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def test_visible_escapes_exactly_the_controlling_characters():
    from heatline.renderers.visible import visible

    for code in range(sys.maxunicode + 1):
        text = f"a{chr(code)}b"
        if CONTROL.search(text):
            escape = f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
            assert visible(text) == f"a{escape}b", hex(code)
        else:
            assert visible(text) == text, hex(code)
    assert visible("\x1b[2J\tok\u202e") == "\\x1b[2J\\x09ok\\u202e"
