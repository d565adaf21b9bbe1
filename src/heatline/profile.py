"""Reading and writing heatline profile files (JSON; see docs/profile-format.md)."""

from __future__ import annotations

import json
import os
from typing import Any

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

    Writes a temporary file next to ``path`` and renames it into place, so a reader (or an
    interrupted write) never sees half a profile.
    """
    if os.path.exists(path) and not os.path.isfile(path):
        # A device or pipe (say /dev/stderr) cannot be renamed over: write to it directly.
        with open(path, "w", encoding="utf-8") as f:
            _write_json(profile, f)
        return
    tmp_path = f"{path}.{os.getpid()}.tmp"  # plain open() so the file gets the usual umask mode
    try:
        with open(tmp_path, "w", encoding="utf-8") as f:
            _write_json(profile, f)
        os.replace(tmp_path, path)
    except BaseException:
        try:
            os.unlink(tmp_path)
        except OSError:
            pass
        raise


def _write_json(profile: dict[str, Any], f: Any) -> None:
    json.dump(profile, f, indent=1, ensure_ascii=False)
    f.write("\n")
