"""Reading and writing heatline profile files (JSON; see docs/profile-format.md)."""

from __future__ import annotations

import json
import os
from typing import Any, Callable

SCHEMA_VERSION = 3

REQUIRED_KEYS = (
    "schema_version",
    "heatline_version",
    "program",
    "argv",
    "python_version",
    "platform",
    "started_at",
    "elapsed_s",
    "cpu_s",
    "sampling_interval_s",
    "samples",
    "sampled_s",
    "lost_s",
    "totals",
    "threads",
    "files",
    "stacks",
    "peak_bytes",
    "peak_at",
    "memory_timeline",
    "memory",
    "gpu",
    "warnings",
)
REQUIRED_FILE_KEYS = (
    "python_s",
    "native_s",
    "system_s",
    "python_pct",
    "native_pct",
    "system_pct",
    "lines",
    "functions",
)
_TOP_LEVEL_TYPES = {
    "totals": dict,
    "threads": list,
    "files": dict,
    "stacks": dict,
    "warnings": list,
    "argv": list,
    "memory_timeline": list,
    "memory": dict,
    "gpu": dict,
}


class ProfileError(Exception):
    """A profile file cannot be used; str() is a one-line message naming the file."""


def load(path: str) -> dict[str, Any]:
    """Read and validate a profile written by :func:`dump`."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        raise ProfileError(f"can't open profile '{path}': no such file") from None
    except IsADirectoryError:
        raise ProfileError(f"can't open profile '{path}': it is a directory") from None
    except OSError as exc:
        raise ProfileError(f"can't open profile '{path}': {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ProfileError(f"'{path}' is not a heatline profile (not UTF-8 text)") from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ProfileError(f"'{path}' is not a heatline profile (invalid JSON: {exc})") from None
    validate(data, path)
    return data


def validate(data: Any, path: str = "profile") -> None:
    """Raise ProfileError unless ``data`` looks like a profile this version can read."""
    if not isinstance(data, dict) or "schema_version" not in data or "heatline_version" not in data:
        raise ProfileError(f"'{path}' is JSON but not a heatline profile")
    version = data["schema_version"]
    if version != SCHEMA_VERSION:
        raise ProfileError(
            f"'{path}' uses profile schema version {version!r}; "
            f"this heatline reads version {SCHEMA_VERSION}"
        )
    missing = [key for key in REQUIRED_KEYS if key not in data]
    if missing:
        raise ProfileError(f"'{path}' is missing required keys: {', '.join(missing)}")
    for key, kind in _TOP_LEVEL_TYPES.items():
        if not isinstance(data[key], kind):
            raise ProfileError(f"'{path}': '{key}' should be a JSON {_json_type(kind)}")
    for file_path, entry in data["files"].items():
        if not isinstance(entry, dict):
            raise ProfileError(f"'{path}': files['{file_path}'] should be a JSON object")
        missing = [key for key in REQUIRED_FILE_KEYS if key not in entry]
        if missing:
            raise ProfileError(
                f"'{path}': files['{file_path}'] is missing required keys: {', '.join(missing)}"
            )


def _json_type(kind: type) -> str:
    return "object" if kind is dict else "array"


def dump(profile: dict[str, Any], path: str) -> None:
    """Write ``profile`` to ``path`` as JSON.

    Writes a temporary file in the directory of the file ``path`` names (through symlinks)
    and renames it onto that file, so a reader (or an interrupted write) never sees half a
    profile, a symlink stays a symlink to the same file, and an existing file keeps its
    permission bits; a new file gets the usual mode (0666 less the umask). Strings that are
    not valid Unicode (the surrogates Python makes of undecodable bytes in argv or paths,
    PEP 383) are written as JSON ``\\udcXX`` escapes, so the file stays UTF-8 and reading
    it back gives the same strings. Raises OSError if the profile cannot be written.
    """

    def write(file: Any) -> None:
        with _open_text(file) as f:
            _write_json(profile, f)

    replace_file(path, write)


def write_bytes(data: bytes, path: str) -> None:
    """Write ``data`` to ``path`` the way :func:`dump` writes (the other output formats)."""

    def write(file: Any) -> None:
        with open(file, "wb") as f:
            f.write(data)

    replace_file(path, write)


def replace_file(path: str, write: Callable[[Any], None]) -> None:
    """``write(file)`` (a path or file descriptor to open for writing) to a temporary file
    renamed onto ``path``; see :func:`dump`."""
    target = os.path.realpath(path)
    if os.path.exists(target) and not os.path.isfile(target):
        # A device or pipe (say /dev/stderr) cannot be renamed over: write to it directly.
        write(path)
        return
    try:
        mode: int | None = os.stat(target).st_mode & 0o7777
    except FileNotFoundError:
        mode = None
    directory, name = os.path.split(target)
    tmp_path = os.path.join(directory, f".{name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    fd = os.open(tmp_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    try:
        if mode is not None:
            os.fchmod(fd, mode)
        write(fd)
        os.replace(tmp_path, target)
    except BaseException:
        try:
            os.unlink(tmp_path)
        except OSError:
            pass
        raise


def _open_text(file: Any) -> Any:
    # backslashreplace fires only on what UTF-8 cannot encode, lone surrogates, and writes
    # them as \udcXX: inside a JSON string, the JSON escape of the same character.
    return open(file, "w", encoding="utf-8", errors="backslashreplace")


def _write_json(profile: dict[str, Any], f: Any) -> None:
    json.dump(profile, f, indent=1, ensure_ascii=False)
    f.write("\n")
