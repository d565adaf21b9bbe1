"""The bytecode a followed child's start is given (run/carrier.py, bytecode_for_children): a
heatline tree without cached bytecode had every child compile its start-up modules from
source (about 20 ms a child); the parent compiles them once into the run directory, and the
child reads them through sys.pycache_prefix."""

import importlib.util
import os
import shutil
import subprocess
import sys

from heatline.run import carrier, collect

SRC = os.path.dirname(os.path.dirname(os.path.abspath(carrier.__file__)))  # .../src/heatline


def _tree_without_bytecode(tmp_path):
    root = tmp_path / "root"
    shutil.copytree(SRC, root / "heatline", ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    return str(root)


def _source(root, name):
    package = os.path.join(root, *name.split("."), "__init__.py")
    return package if os.path.exists(package) else os.path.join(root, *name.split(".")) + ".py"


def test_the_parent_compiles_what_a_child_would_and_the_child_reads_it(tmp_path, monkeypatch):
    root = _tree_without_bytecode(tmp_path)
    monkeypatch.setattr(carrier, "IMPORT_ROOT", root)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    prefix = carrier.bytecode_for_children(str(run_dir))
    assert prefix == str(run_dir / "pycache")
    # One file per module, where importlib looks for it under that prefix.
    written = sorted(os.path.relpath(os.path.join(d, n), prefix)
                     for d, _, names in os.walk(prefix) for n in names)
    monkeypatch.setattr(sys, "pycache_prefix", prefix)
    sources = [_source(root, name) for name in carrier.CHILD_MODULES]
    sources += [sys.modules[name].__file__ for name in carrier.CHILD_LIBRARY_MODULES]
    expected = sorted(os.path.relpath(importlib.util.cache_from_source(source), prefix)
                      for source in sources)
    monkeypatch.setattr(sys, "pycache_prefix", None)
    assert written == expected
    # A child importing them through the prefix compiles nothing: `python -v` names the
    # bytecode file ('quoted') of each module it reads, the source (bare) of each it compiles.
    start = ("import sys; sys.path.insert(0, sys.argv[1]); sys.pycache_prefix = sys.argv[2]; "
             "print('=start=', file=sys.stderr); "
             + "; ".join(f"import {name}" for name in carrier.CHILD_MODULES))
    imported = subprocess.run([sys.executable, "-B", "-v", "-c", start, root, prefix],
                              capture_output=True, text=True, check=True)
    verbose = imported.stderr.split("=start=", 1)[1]
    assert verbose.count("# code object from '") >= len(carrier.CHILD_MODULES), verbose
    compiled = [line for line in verbose.splitlines()
                if line.startswith("# code object from ") and "'" not in line]
    assert compiled == [], compiled
    # The source changed behind importlib's back (same size and mtime): a child that reads
    # the bytecode sees the version compiled before the change.
    version = os.path.join(root, "heatline", "_version.py")
    with open(version) as f:
        text = f.read()
    stat = os.stat(version)
    changed = text.replace('"', "'")
    assert changed != text and len(changed) == len(text)
    with open(version, "w") as f:
        f.write(changed)
    os.utime(version, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    check = ("import sys; sys.path.insert(0, sys.argv[1]); sys.pycache_prefix = sys.argv[2]; "
             "import heatline._version as v; print(v.__version__)")
    read = subprocess.run([sys.executable, "-B", "-c", check, root, prefix],
                          capture_output=True, text=True, check=True)
    namespace = {}
    exec(text, namespace)
    assert read.stdout.strip() == namespace["__version__"]
    assert not os.path.exists(os.path.join(root, "heatline", "__pycache__"))


def test_modules_with_their_own_bytecode_are_left_to_it_unless_one_is_stale(tmp_path,
                                                                          monkeypatch):
    root = _tree_without_bytecode(tmp_path)
    subprocess.run([sys.executable, "-m", "compileall", "-q", os.path.join(root, "heatline")],
                   check=True, capture_output=True)
    monkeypatch.setattr(carrier, "IMPORT_ROOT", root)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    assert carrier.bytecode_for_children(str(run_dir)) is None
    assert os.listdir(run_dir) == []
    # One source newer than its bytecode: the child looks in the cache only, so every module
    # is written there.
    sigterm = os.path.join(root, "heatline", "run", "sigterm.py")
    stat = os.stat(sigterm)
    os.utime(sigterm, ns=(stat.st_atime_ns, stat.st_mtime_ns + 2_000_000_000))
    prefix = carrier.bytecode_for_children(str(run_dir))
    written = [n for _, _, names in os.walk(prefix) for n in names]
    assert len(written) == len(carrier.CHILD_MODULES) + len(carrier.CHILD_LIBRARY_MODULES)


def test_the_run_directory_is_removed_with_the_bytecode_cache_in_it(tmp_path):
    run_dir = tmp_path / "heatline-run"
    (run_dir / "pycache" / "a" / "b").mkdir(parents=True)
    (run_dir / "pycache" / "a" / "b" / "x.pyc").write_bytes(b"x")
    (run_dir / "1-2.prof").write_bytes(b"x")
    collect._remove_dir(str(run_dir))
    assert not run_dir.exists()
