"""Configuration for the scope rule, which lives in the engine (_native/scope.h): the directories
whose files are *not* user code by default, the standard library, installed packages and
heatline itself. This module only computes that list (once, in Python: sysconfig and site know
the directories); scope.h says what the engine does with it and with --profile-only,
--profile-exclude and --profile-all."""

from __future__ import annotations

import os
import site
import sys
import sysconfig


def _candidate_dirs() -> list[str]:
    dirs: list[str] = []
    paths = sysconfig.get_paths()
    dirs += [paths.get(key, "") for key in ("stdlib", "platstdlib", "purelib", "platlib")]
    # site.getsitepackages is missing in some old virtualenv-patched site modules.
    if hasattr(site, "getsitepackages"):
        dirs += site.getsitepackages()
    if hasattr(site, "getusersitepackages"):
        dirs.append(site.getusersitepackages())
    version_dir = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    for prefix in {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}:
        # Only the versioned directory: a bare <prefix>/lib may hold unrelated user files.
        dirs += [os.path.join(prefix, lib, version_dir) for lib in ("lib", "lib64")]
        if sys.platform == "win32":
            dirs.append(os.path.join(prefix, "Lib"))
    dirs.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # heatline's package
    return dirs


def _normalise(path: str) -> str:
    return os.path.normcase(os.path.abspath(path)).rstrip(os.sep) + os.sep


def default_exclude_prefixes() -> list[str]:
    """Normalised absolute directory prefixes (with a trailing separator), without duplicates.

    Each directory is given both as spelled and with symlinks resolved, because code objects
    carry whichever spelling the import system used.
    """
    prefixes: list[str] = []
    for directory in _candidate_dirs():
        if not directory:
            continue
        for spelling in (directory, os.path.realpath(directory)):
            prefix = _normalise(spelling)
            if prefix != os.sep and prefix not in prefixes:
                prefixes.append(prefix)
    return prefixes
