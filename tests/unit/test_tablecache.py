"""engine/tablecache.py: the engine's tables kept from one run to the next, used only while
what they were made from is unchanged, and a damaged file never more than a miss."""

import os
import subprocess
import sys

import pytest

from heatline.engine import tablecache

# Nothing checked here depends on the CPython version: runs on the main CPython and under ASan,
# not on every version (Makefile, suite-3.X).
pytestmark = pytest.mark.interpreter_independent

KEY = ("3.11.7 (main)", "/venv", "/base", "/venv", "/base", "", "/home/u", "/h/scope.py")
PREFIXES = ["/base/lib/python3.11/", "/venv/bin/pytest"]
FLAGS = bytes(range(256))


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    directory = tmp_path / "cache"
    monkeypatch.setenv("HEATLINE_CACHE_DIR", str(directory))
    return directory


def test_tables_saved_are_loaded_back(cache_dir, tmp_path):
    scripts = tmp_path / "bin"
    scripts.mkdir()
    tablecache.save(KEY, tablecache.watch([str(scripts)]), PREFIXES, FLAGS)
    assert tablecache.load(KEY) == (PREFIXES, FLAGS)
    [name] = os.listdir(cache_dir)
    assert name == os.path.basename(tablecache.path_for(KEY)) and name.startswith("tables-")
    assert tablecache.load(KEY[:-1] + ("/other/scope.py",)) is None  # another key: another file


def test_a_launcher_installed_since_makes_it_miss(cache_dir, tmp_path):
    """A scripts directory whose contents changed after its time was taken (a launcher
    installed or removed: the directory's modification time moves on)."""
    scripts = tmp_path / "bin"
    scripts.mkdir()
    watched = tablecache.watch([str(scripts), str(tmp_path / "absent")])
    tablecache.save(KEY, watched, PREFIXES, FLAGS)
    assert tablecache.load(KEY) is not None
    (tmp_path / "absent").mkdir()  # what was absent exists now
    assert tablecache.load(KEY) is None
    tablecache.save(KEY, tablecache.watch([str(scripts)]), PREFIXES, FLAGS)
    os.utime(scripts, ns=(0, 12345))
    assert tablecache.load(KEY) is None


@pytest.mark.parametrize("damage", [
    b"", b"\xff\xfe garbage", b"heatline-tables 1\0", b"heatline-tables 2\0" + b"8\0",
    "truncate", "extra", "short flags", "bad count",
])
def test_a_damaged_file_is_a_miss(cache_dir, damage):
    tablecache.save(KEY, [], PREFIXES, FLAGS)
    path = tablecache.path_for(KEY)
    with open(path, "rb") as file:
        good = file.read()
    if damage == "truncate":
        damage = good[:len(good) // 2]
    elif damage == "extra":
        damage = good + b"\0more"
    elif damage == "short flags":
        damage = good[:good.rindex(b"\0") + 1] + b"00ff"
    elif damage == "bad count":
        damage = good.replace(b"\x002\x00", b"\x00-7\x00", 1)
        assert damage != good
    with open(path, "wb") as file:
        file.write(damage)
    assert tablecache.load(KEY) is None


def test_the_cache_can_be_turned_off_and_needs_a_place(monkeypatch, tmp_path):
    monkeypatch.setenv("HEATLINE_CACHE_DIR", "")
    assert tablecache.path_for(KEY) is None
    tablecache.save(KEY, [], PREFIXES, FLAGS)  # nothing, and no error
    assert tablecache.load(KEY) is None
    monkeypatch.delenv("HEATLINE_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert tablecache.path_for(KEY).startswith(str(tmp_path / "xdg" / "heatline") + os.sep)
    monkeypatch.setenv("XDG_CACHE_HOME", "relative")  # not absolute: ignored, as XDG says
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert tablecache.path_for(KEY).startswith(str(tmp_path / "home" / ".cache" / "heatline"))
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.delenv("HOME")
    assert tablecache.path_for(KEY) is None


def test_an_unwritable_place_writes_nothing_and_raises_nothing(tmp_path, monkeypatch):
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("HEATLINE_CACHE_DIR", str(tmp_path / "file" / "below"))
    tablecache.save(KEY, [], PREFIXES, FLAGS)
    assert tablecache.load(KEY) is None


def test_the_second_run_reads_the_tables_the_first_kept(tmp_path):
    """The second run of an interpreter reads the tables the first one kept: it imports
    neither sysconfig nor opcode (which working them out does), and its tables are the
    ones the first worked out."""
    env = dict(os.environ, HEATLINE_CACHE_DIR=str(tmp_path / "cache"))
    (tmp_path / "empty.py").write_text("pass\n")
    command = [sys.executable, "-X", "importtime", "-m", "heatline", "-q", "-o",
               str(tmp_path / "p.json"), str(tmp_path / "empty.py")]
    imported = []
    for _ in range(2):
        done = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
        imported.append({line.rpartition("|")[2].strip() for line in done.stderr.splitlines()
                         if line.startswith("import time:")})
    assert {"sysconfig", "opcode"} <= imported[0], sorted(imported[0])
    assert not {"sysconfig", "opcode"} & imported[1], sorted(imported[1])
    code = ("import os, sys; from heatline.engine import session, tablecache;"
            "print(tablecache.load(session._tables_key()) == (__import__('heatline.engine.scope',"
            " fromlist=['x']).default_exclude_prefixes(),"
            " __import__('heatline.engine.opcodes', fromlist=['x']).opcode_flags_table()))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, check=True)
    assert done.stdout.strip() == "True", (done.stdout, done.stderr)
