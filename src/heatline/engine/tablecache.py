"""The engine's tables (the scope's library prefixes and launchers, the opcode table: session.py's
``_tables``) kept on disk from one run to the next. Working them out imports sysconfig and
reads every launcher of the scripts directories: about 19 M instructions, 4 ms of CPU time,
on each run's start (CPython 3.11, a virtual environment of 39 scripts; more with more
launchers), where reading them back costs a file read and a few stats.

The file is ``heatline/tables-XXXXXXXX`` in the user's cache directory (``$XDG_CACHE_HOME``,
else ``~/.cache``; ``HEATLINE_CACHE_DIR`` names another, and set empty turns the cache off), one
per interpreter and environment (XXXXXXXX: a hash of what the tables depend on). It is used
only when what it was made from is unchanged: the same key (session.py's ``_tables_key``:
the interpreter's version and prefixes, the user base, heatline's directory) and the same
modification times of the scripts directories (a launcher installed or removed changes its
directory's) and of heatline's scope.py and opcodes.py; else the tables are worked out again
and the file rewritten (whole, renamed into place). A file that cannot be read or parsed is
treated as absent; one that cannot be written is not written. Plain text, NUL-separated (no
marshal or pickle: a damaged file must not be able to do anything but be ignored)."""

from __future__ import annotations

import os

# collections.abc only for type checkers: a run's path imports none of it (heatline/__init__.py).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

MAGIC = "heatline-tables 1"


def _hash(text: str) -> int:
    """FNV-1a, 32 bits: stable from one process to the next (hash() is not)."""
    value = 0x811C9DC5
    for byte in text.encode("utf-8", "surrogateescape"):
        value = ((value ^ byte) * 0x01000193) & 0xFFFFFFFF
    return value


def path_for(key: Sequence[str]) -> str | None:
    """The cache file for tables of ``key``, or None when the cache is off."""
    base = os.environ.get("HEATLINE_CACHE_DIR")
    if base is None:
        xdg = os.environ.get("XDG_CACHE_HOME", "")
        if not os.path.isabs(xdg):
            home = os.environ.get("HOME", "")
            if not os.path.isabs(home):
                return None
            xdg = os.path.join(home, ".cache")
        base = os.path.join(xdg, "heatline")
    elif not base:
        return None
    return os.path.join(base, "tables-%08x" % _hash("\0".join(key)))


def _mtime(path: str) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return -1


def load(key: Sequence[str]) -> tuple[list[str], bytes] | None:
    """The tables kept for ``key``, when they are still valid; else None."""
    path = path_for(key)
    if path is None:
        return None
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as file:
            fields = file.read().split("\0")
    except (OSError, ValueError):
        return None
    try:
        at = 0

        def take(count: int) -> list[str]:
            nonlocal at
            if count < 0 or at + count > len(fields):
                raise ValueError
            at += count
            return fields[at - count:at]

        if take(1) != [MAGIC] or take(int(take(1)[0])) != list(key):
            return None
        watched = take(2 * int(take(1)[0]))
        for index in range(0, len(watched), 2):
            if _mtime(watched[index]) != int(watched[index + 1]):
                return None
        prefixes = take(int(take(1)[0]))
        opcode_flags = bytes.fromhex(take(1)[0])
        if at != len(fields) or len(opcode_flags) != 256:
            return None
    except ValueError:
        return None
    return prefixes, opcode_flags


def watch(paths: Sequence[str]) -> list[tuple[str, int]]:
    """``paths`` with their modification times now (-1: absent), for :func:`save`: taken
    before the tables are worked out, so that a change made meanwhile makes the next run's
    :func:`load` miss rather than keep tables that lack it."""
    return [(path, _mtime(path)) for path in paths]


def save(key: Sequence[str], watched: Sequence[tuple[str, int]], prefixes: Sequence[str],
         opcode_flags: bytes) -> None:
    """Keep the tables made from ``key`` and the files and directories ``watched``
    (:func:`watch`). Nothing is raised: a cache that cannot be written is not."""
    path = path_for(key)
    names = [name for name, _ in watched]
    if path is None or any("\0" in text for text in (*key, *names, *prefixes)):
        return
    fields = [MAGIC, str(len(key)), *key, str(len(watched))]
    for name, mtime in watched:
        fields += [name, str(mtime)]
    fields += [str(len(prefixes)), *prefixes, opcode_flags.hex()]
    temporary = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        with open(temporary, "w", encoding="utf-8", errors="surrogateescape") as file:
            file.write("\0".join(fields))
        os.replace(temporary, path)
    except (OSError, ValueError):
        try:
            os.unlink(temporary)
        except OSError:
            pass
