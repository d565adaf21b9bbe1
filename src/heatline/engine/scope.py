"""Configuration for the scope rule, which lives in the engine (_native/scope.h): the directories
whose files are *not* user code by default, the standard library, installed packages and
heatline itself, and the console-script launchers (the small scripts pip writes into a bin
directory for an entry point: `venv/bin/pytest`), which only call into an installed package.
This module only computes that list (once, in Python: sysconfig and site know the
directories); scope.h says what the engine does with it and with --profile-only,
--profile-exclude and --profile-all."""

from __future__ import annotations

import os
import site
import sys

# sysconfig is imported where it is used: a spawned child given its parent's tables
# (session.adopt_tables) never needs it.


def _candidate_dirs() -> list[str]:
    import sysconfig

    dirs: list[str] = []
    paths = sysconfig.get_paths()
    dirs += [paths.get(key, "") for key in ("stdlib", "platstdlib", "purelib", "platlib")]
    # site.getsitepackages is missing in some old virtualenv-patched site modules.
    if hasattr(site, "getsitepackages"):
        dirs += site.getsitepackages()
    if hasattr(site, "getusersitepackages"):
        dirs.append(site.getusersitepackages())
    version_dir = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    # In this order, each once (a set would order them by string hash, which differs from one
    # process to the next: a child given its parent's list must get the very list it makes).
    prefixes = (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix)
    for prefix in dict.fromkeys(prefixes):
        # Only the versioned directory: a bare <prefix>/lib may hold unrelated user files.
        dirs += [os.path.join(prefix, lib, version_dir) for lib in ("lib", "lib64")]
        if sys.platform == "win32":
            dirs.append(os.path.join(prefix, "Lib"))
    dirs.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # heatline's package
    return dirs


def _normalise(path: str) -> str:
    return os.path.normcase(os.path.abspath(path)).rstrip(os.sep) + os.sep


# A launcher is a small file: larger ones, and directories listing more entries than this (a
# system's /usr/bin), are not read through (the program's own launcher is still checked).
LAUNCHER_MAX_BYTES = 4096
SCRIPTS_DIR_MAX_ENTRIES = 1000


def is_launcher(path: str) -> bool:
    """Whether ``path`` is a console-script launcher, by what it does: a ``#!`` script whose
    code (comments and blank lines aside) is imports, then ``if __name__ == "__main__":``
    holding at most rewrites of ``sys.argv[0]`` and, last, ``sys.exit(NAME())`` with NAME
    imported from a module. That is the shape pip, uv and installer write for an entry point;
    a script of the user's that defines or computes anything is not one.
    Plain string work: this runs as every profiled process starts (no ``re``, no ``ast``)."""
    try:
        with open(path, "rb") as f:
            head = f.read(LAUNCHER_MAX_BYTES + 1)
    except OSError:
        return False
    if len(head) > LAUNCHER_MAX_BYTES or not head.startswith(b"#!"):
        return False
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        return False
    code = [line.rstrip() for line in text.splitlines()[1:]
            if line.strip() and not line.lstrip().startswith("#")]
    imported = set()
    at = 0
    for at, line in enumerate(code):  # noqa: B007 -- `at` is where the imports end
        if line.startswith("from ") and " import " in line:
            name = line.split(" import ", 1)[1].split(" as ")[-1].strip()
            imported.add(name)
        elif not line.startswith("import "):
            break
    else:
        return False
    if code[at].replace('"', "'") != "if __name__ == '__main__':":
        return False
    body = code[at + 1:]
    if not body or not all(line[:1] in (" ", "\t") for line in body):
        return False
    last = body[-1].strip()
    if not (last.startswith("sys.exit(") and last.endswith("())")):
        return False
    if last[len("sys.exit("):-len("())")] not in imported:
        return False
    return all("sys.argv[0]" in line or line.strip() == "else:" for line in body[:-1])


def scripts_dirs() -> list[str]:
    """Where pip writes this interpreter's launchers: its scheme's scripts directory (the
    virtual environment's bin), and the user scheme's (``pip install --user``)."""
    import sysconfig

    dirs = [sysconfig.get_path("scripts")]
    if hasattr(site, "getuserbase") and os.name == "posix":
        dirs.append(os.path.join(site.getuserbase(), "bin"))
    return [d for d in dirs if d]


def launcher_files() -> list[str]:
    """The launchers in this interpreter's scripts directories (launcher_files_among)."""
    paths = []
    for directory in scripts_dirs():
        try:
            with os.scandir(directory) as entries:
                listed = []
                for entry in entries:
                    listed.append(entry)
                    if len(listed) > SCRIPTS_DIR_MAX_ENTRIES:
                        listed = []
                        break
        except OSError:
            continue
        for entry in listed:
            try:
                if entry.is_file() and entry.stat().st_size <= LAUNCHER_MAX_BYTES:
                    paths.append(entry.path)
            except OSError:
                continue
    return launcher_files_among(paths)


def launcher_files_among(paths: list[str]) -> list[str]:
    """Those of ``paths`` that are launchers, each as spelled and with symlinks resolved;
    absolute, without a trailing separator (the engine matches them as whole paths)."""
    found: list[str] = []
    for path in paths:
        if not path or not is_launcher(path):
            continue
        for spelling in (path, os.path.realpath(path)):
            absolute = os.path.normcase(os.path.abspath(spelling))
            if absolute not in found:
                found.append(absolute)
    return found


def default_exclude_prefixes() -> list[str]:
    """Normalised absolute directory prefixes (with a trailing separator), without duplicates.

    Each directory is given both as spelled and with symlinks resolved, because code objects
    carry whichever spelling the import system used. The launchers of this interpreter's
    scripts directories follow, as whole files (no trailing separator: launcher_files).
    """
    prefixes: list[str] = []
    for directory in _candidate_dirs():
        if not directory:
            continue
        for spelling in (directory, os.path.realpath(directory)):
            prefix = _normalise(spelling)
            if prefix != os.sep and prefix not in prefixes:
                prefixes.append(prefix)
    return prefixes + launcher_files()
