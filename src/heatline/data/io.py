"""Reading, validating and writing heatline profile files (JSON; see docs/profile-format.md)."""

from __future__ import annotations

import math
import os

from heatline.data.gpu import LINE_KEYS as GPU_LINE_KEYS
from heatline.data.memory import LINE_KEYS as MEMORY_LINE_KEYS
from heatline.data.memory import TOTAL_KEYS as MEMORY_TOTAL_KEYS

# typing only for type checkers: a run's path imports none (heatline/__init__.py).
TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: importing typing costs every run about 4 ms
    from typing import Any, Callable
    from heatline.data.model import Profile, Stacks

SCHEMA_VERSION = 5
# Versions this heatline can still show: version 3 differs only in listing every line of files
# up to 5000 lines (idle ones too), which reads the same; version 4 has no child processes
# (`processes`, `process_profiles`), which are optional.
READABLE_VERSIONS = (3, 4, 5)

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
# The largest profile file `load` reads. heatline's own profiles stay below this (a 60-file
# program of 240,000 executed lines gives 95 MB); the bound keeps a wrong argument (/dev/zero,
# a disk image) from filling memory.
MAX_PROFILE_BYTES = 256 * 1024 * 1024
_READ_CHUNK = 1024 * 1024
# Numbers of this size or more are refused: the renderers divide, multiply and format every
# number as a float, which must stay finite.
_MAX_INT = 2**63  # bytes and nanoseconds fit; 9.2e18

# The documented shape (docs/profile-format.md), checked field by field so a reader can use
# every field without checking it again. A spec is a Python type (float means any number
# below 2**63 in size, int an integer; bool never counts as a number), a dict (an object with
# those keys; more keys are allowed), a one-element list (an array of that spec), a tuple of
# specs (any of them), or None (JSON null).
_NUMBER = float
_TIMES = {
    key: _NUMBER
    for key in ("python_s", "native_s", "system_s", "python_pct", "native_pct", "system_pct")
}
_POINT = [_NUMBER]  # [t_s, bytes]; the length is checked separately
_MEMORY_FIELDS = {
    **{key: _NUMBER for key in MEMORY_LINE_KEYS},
    "timeline": [_POINT],
    "leak": (None, {"likelihood": _NUMBER, "growth_bytes_per_s": _NUMBER}),
}
_GPU_FIELDS = {key: _NUMBER for key in GPU_LINE_KEYS}
_LINE = {"line": int, "source": str, **_TIMES, **_MEMORY_FIELDS, **_GPU_FIELDS}
_FUNCTION = {
    "name": str,
    "qualname": str,
    "first_line": int,
    **_TIMES,
    **_MEMORY_FIELDS,
    **_GPU_FIELDS,
}
# A line's or function's native_functions (optional: --native; no schema bump).
_NATIVE_FUNCTIONS = [{"symbol": str, "library": (None, str), "seconds": _NUMBER}]
_FILE = {
    **{key: _NUMBER for key in REQUIRED_FILE_KEYS if key not in ("lines", "functions")},
    "lines": [_LINE],
    "functions": [_FUNCTION],
}
_SECONDS = {key: _NUMBER for key in ("python_s", "native_s", "system_s")}
# A thread's optional fields (no schema bump): its name, and a thread without a Python thread
# state's own (--native).
_NATIVE_THREAD = {"python": bool, "name": str, "comm": str,
                  "native_functions": _NATIVE_FUNCTIONS}
_MEMORY_TOTALS = {key: _NUMBER for key in MEMORY_TOTAL_KEYS}
_GPU_TOTALS = {  # when gpu.enabled
    "kernel_tracing": bool,
    "devices": [
        {
            "index": int,
            "name": str,
            "memory_total_bytes": _NUMBER,
            "utilisation_pct": _NUMBER,
            "idle_share": _NUMBER,
            "peak_memory_used_bytes": _NUMBER,
        }
    ],
    "gpu_s": _NUMBER,
    "unattributed_gpu_s": _NUMBER,
    "launches": int,
    "alloc_peak_bytes": _NUMBER,
    "alloc_peak_at": (None, {"file": str, "line": int, "t_s": _NUMBER}),
    "kernels": [
        {
            "name": str,
            "calls": int,
            "gpu_s": _NUMBER,
            "other_lines_calls": _NUMBER,
            "lines": [{"file": (None, str), "line": (None, int)}],
        }
    ],
}
_SCHEMA: dict[str, Any] = {
    "schema_version": int,
    "heatline_version": str,
    "program": str,
    "argv": [str],
    "python_version": str,
    "platform": str,
    "started_at": str,
    "elapsed_s": _NUMBER,
    "cpu_s": _NUMBER,
    "sampling_interval_s": _NUMBER,
    "samples": int,
    "sampled_s": _NUMBER,
    "lost_s": _NUMBER,
    "totals": {
        **_SECONDS,
        "attributed_s": _NUMBER,
        "unattributed_s": _NUMBER,
    },
    "threads": [
        {"native_id": int, "main": bool, **_SECONDS, "unattributed_s": _NUMBER, "cpu_s": _NUMBER}
    ],
    "files": _FILE,  # an object of these, keyed by path (see _check)
    "stacks": {
        "frames": [{"file": str, "name": str, "qualname": str, "line": int}],
        "entries": [{"stack": [int], "thread": int, **_SECONDS}],
        "dropped_s": _NUMBER,
    },
    "peak_bytes": _NUMBER,
    "peak_at": (None, {"file": str, "line": int, "t_s": _NUMBER}),
    "memory_timeline": [_POINT],
    "memory": {"enabled": bool},  # and _MEMORY_TOTALS when enabled
    "gpu": {"enabled": bool},  # and _GPU_TOTALS when enabled
    "warnings": [str],
}


# The summary's sentences (data/summary.py); optional, older files lack it.
_SUMMARY_ITEM = {"rule": str, "text": str, "file": (None, str), "line": (None, int)}

# Present when child processes were profiled (docs/profile-format.md, "Child processes").
_PROCESS = {
    "pid": int,
    "ppid": int,
    "role": str,
    "argv": [str],
    "exit": str,
    **{key: _NUMBER for key in ("start_s", "elapsed_s", "cpu_s", "peak_bytes")},
    **_SECONDS,
}


# Where and when the process ran (docs/profile-format.md, Top level; `host` on `processes`
# too): optional, added in schema 5 without a version bump.
_IDENTITY = {"host": str, "pid": int, "started_at_epoch": _NUMBER}
# A distributed engine's tasks (docs/profile-format.md, `tasks`): optional, added in schema 5
# without a version bump.
_TASK = {
    "name": str,
    "count": int,
    **{key: _NUMBER for key in ("wall_s", "python_s", "native_s", "system_s", "alloc_bytes")},
    "lines": [{"file": str, "line": int, "time_s": _NUMBER}],
}


# A profile taken by heatline attach (docs/profile-format.md, `attached`): optional, added in
# schema 5 without a version bump; attach_s and detach_s may be absent.
_ATTACHED = {"pid": int, "started_at_epoch": _NUMBER, "ended_by": str}

# A merged profile's peak (docs/profile-format.md, "Child processes"): optional, added in
# schema 5 without a version bump.
_PLACE = (None, {"file": str, "line": int, "t_s": _NUMBER})
_MERGED_PEAK = {
    "combined_peak": {
        "t_s": _NUMBER,
        "lines": [{"pid": int, "file": str, "line": int, "bytes": _NUMBER}],
    },
    "main_peak_bytes": _NUMBER,
    "main_peak_at": _PLACE,
}


class ProfileError(Exception):
    """A profile file cannot be used; str() is a one-line message naming the file."""


def load(path: str) -> Profile:
    """Read and validate a profile written by :func:`dump` (at most MAX_PROFILE_BYTES)."""
    try:
        with open(path, "rb") as f:
            chunks = []
            size = 0
            while size <= MAX_PROFILE_BYTES:
                chunk = f.read(_READ_CHUNK)
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
    except FileNotFoundError:
        raise ProfileError(f"can't open profile '{path}': no such file") from None
    except IsADirectoryError:
        raise ProfileError(f"can't open profile '{path}': it is a directory") from None
    except OSError as exc:
        raise ProfileError(f"can't open profile '{path}': {exc.strerror or exc}") from None
    if size > MAX_PROFILE_BYTES:
        raise ProfileError(
            f"'{path}' is not a heatline profile (larger than {MAX_PROFILE_BYTES // 2**20} MiB)"
        )
    try:
        text = b"".join(chunks).decode("utf-8")
    except UnicodeDecodeError:
        raise ProfileError(f"'{path}' is not a heatline profile (not UTF-8 text)") from None
    del chunks
    import json  # here: json imports re and compiles its patterns, costly on every run's end

    try:
        data = json.loads(text, parse_constant=_refuse_constant)
    except RecursionError:
        raise ProfileError(f"'{path}' is not a heatline profile (JSON nested too deeply)") from None
    except ValueError as exc:
        raise ProfileError(f"'{path}' is not a heatline profile (invalid JSON: {exc})") from None
    validate(data, path)
    return data


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number a profile may hold")


def validate(data: Any, path: str = "profile") -> None:
    """Raise ProfileError unless ``data`` has the documented shape of a profile this version
    reads: every field the readers use is present with its documented type."""
    if not isinstance(data, dict) or "schema_version" not in data or "heatline_version" not in data:
        raise ProfileError(f"'{path}' is JSON but not a heatline profile")
    version = data["schema_version"]
    if version not in READABLE_VERSIONS or isinstance(version, bool):
        raise ProfileError(
            f"'{path}' uses profile schema version {version!r}; "
            f"this heatline reads versions {READABLE_VERSIONS[0]} to {SCHEMA_VERSION}"
        )
    missing = [key for key in REQUIRED_KEYS if key not in data]
    if missing:
        raise ProfileError(f"'{path}' is missing required keys: {', '.join(missing)}")
    try:
        for key, spec in _SCHEMA.items():
            if key == "files":
                if not isinstance(data[key], dict):
                    raise _Invalid(key, "should be a JSON object")
                for file_path, entry in data[key].items():
                    _check(entry, _FILE, f"files[{file_path!r}]")
                    for number, line in enumerate(entry["lines"]):  # optional: schema 4+
                        if "function" in line:
                            where = f"files[{file_path!r}].lines[{number}].function"
                            _check(line["function"], (None, str), where)
                        if "native_functions" in line:
                            where = f"files[{file_path!r}].lines[{number}].native_functions"
                            _check(line["native_functions"], _NATIVE_FUNCTIONS, where)
                    for number, function in enumerate(entry["functions"]):
                        if "native_functions" in function:
                            where = f"files[{file_path!r}].functions[{number}].native_functions"
                            _check(function["native_functions"], _NATIVE_FUNCTIONS, where)
            else:
                _check(data[key], spec, key)
        if data["memory"]["enabled"]:
            _check(data["memory"], _MEMORY_TOTALS, "memory")
        if data["gpu"]["enabled"]:
            _check(data["gpu"], _GPU_TOTALS, "gpu")
        _check_stack_references(data["stacks"], len(data["threads"]))
        for number, thread in enumerate(data["threads"]):  # optional: threads without a
            for key, spec in _NATIVE_THREAD.items():        # Python thread state (no bump)
                if key in thread:
                    _check(thread[key], spec, f"threads[{number}].{key}")
        if "summary" in data:  # optional: added in schema 5 without a bump
            _check(data["summary"], [_SUMMARY_ITEM], "summary")
        if "attached" in data:  # optional: added in schema 5 without a bump
            _check(data["attached"], _ATTACHED, "attached")
        if "profiled_periods" in data:  # optional: added in schema 4 without a bump
            _check(data["profiled_periods"], [_POINT], "profiled_periods")
        if "paused" in data:  # optional: added in schema 5 without a bump
            _check(data["paused"], bool, "paused")
        for key, spec in _MERGED_PEAK.items():  # optional: profiles with child processes
            if key in data:
                _check(data[key], spec, key)
        for key, spec in _IDENTITY.items():  # optional: older files lack them
            if key in data:
                _check(data[key], spec, key)
        if "tasks" in data:  # optional: a distributed engine's workers (schema 5, no bump)
            _check(data["tasks"], [_TASK], "tasks")
        if "processes" in data:
            _check(data["processes"], [_PROCESS], "processes")
            for number, process in enumerate(data["processes"]):
                if "host" in process:  # optional: older files lack it
                    _check(process["host"], str, f"processes[{number}].host")
                if "address" in process:  # optional: a distributed engine's worker
                    _check(process["address"], str, f"processes[{number}].address")
            own = data.get("process_profiles")
            if not isinstance(own, dict) or any(
                not isinstance(p, dict) or "processes" in p for p in own.values()
            ):
                raise _Invalid("process_profiles", "should be an object of profiles")
        _check_cpu_waits(data)
    except _Invalid as exc:
        raise ProfileError(f"'{path}': {exc.where} {exc.problem}") from None
    for pid, own_profile in data.get("process_profiles", {}).items():
        validate(own_profile, f"{path}: process_profiles[{pid}]")


def _check_cpu_waits(data: Any) -> None:
    """The optional fields of waits for a CPU (absent from files written before they were
    measured) and the machine's CPU count: numbers where present."""
    keys = ("cpu_wait_s", "cpu_wait_pct")
    places: list[tuple[str, Any]] = [("totals", data["totals"])]
    for file_path, entry in data["files"].items():
        places.append((f"files[{file_path!r}]", entry))
        places += [(f"files[{file_path!r}].lines[{n}]", line)
                   for n, line in enumerate(entry["lines"])]
        places += [(f"files[{file_path!r}].functions[{n}]", function)
                   for n, function in enumerate(entry["functions"])]
    places += [(f"threads[{n}]", thread) for n, thread in enumerate(data["threads"])]
    places += [(f"stacks.entries[{n}]", entry)
               for n, entry in enumerate(data["stacks"]["entries"])]
    places += [(f"processes[{n}]", process)
               for n, process in enumerate(data.get("processes") or [])]
    for where, item in places:
        for key in keys:
            if key in item:
                _check(item[key], _NUMBER, f"{where}.{key}")
    if "cpu_count" in data:
        _check(data["cpu_count"], int, "cpu_count")


def _check_stack_references(stacks: Stacks, threads: int) -> None:
    """The stacks' entries index the frame table and the thread list: an index outside them
    would fail (or, negative, silently mislabel) in every renderer that follows it."""
    frames = len(stacks["frames"])
    for number, frame in enumerate(stacks["frames"]):
        if "elided" in frame:  # optional: a deep stack's elided middle (schema 5, no bump)
            where = f"stacks.frames[{number}]"
            _check(frame["elided"], int, f"{where}.elided")
            _check(frame.get("elided_max", 0), int, f"{where}.elided_max")
            _check(frame.get("functions_kept", False), bool, f"{where}.functions_kept")
            _check(frame.get("outer_unknown", False), bool, f"{where}.outer_unknown")
        if "native" in frame:  # optional: a native function's frame (--native, no bump)
            _check(frame["native"], bool, f"stacks.frames[{number}].native")
        # optional: where a native function was (no bump); the mapping's fields come together
        mapping = ("mapping_start", "mapping_limit", "mapping_offset")
        for key in ("address", *mapping) if "mapping_start" in frame else ("address",):
            if key in frame or key in mapping:
                _check(frame.get(key), int, f"stacks.frames[{number}].{key}")
        if "build_id" in frame:
            _check(frame["build_id"], str, f"stacks.frames[{number}].build_id")
    for number, entry in enumerate(stacks["entries"]):
        where = f"stacks.entries[{number}]"
        if any(not 0 <= index < frames for index in entry["stack"]):
            raise _Invalid(f"{where}.stack", f"should hold indices of stacks.frames (0-{frames-1})")
        if not 0 <= entry["thread"] < threads:
            raise _Invalid(f"{where}.thread", f"should be an index of threads (0-{threads - 1})")


class _Invalid(Exception):
    def __init__(self, where: str, problem: str) -> None:
        super().__init__(where, problem)
        self.where = where
        self.problem = problem


def _check(value: Any, spec: Any, where: str) -> None:
    """Raise _Invalid unless ``value`` matches ``spec`` (see _SCHEMA). Iterative over arrays,
    recursive only along the spec, whose depth is fixed."""
    if isinstance(spec, tuple):
        for option in spec:
            try:
                _check(value, option, where)
                return
            except _Invalid:
                pass
        raise _Invalid(where, f"should be {' or '.join(_describe(option) for option in spec)}")
    if spec is None:
        if value is not None:
            raise _Invalid(where, "should be null")
    elif isinstance(spec, dict):
        if not isinstance(value, dict):
            raise _Invalid(where, "should be a JSON object")
        missing = [key for key in spec if key not in value]
        if missing:
            raise _Invalid(where, f"is missing required keys: {', '.join(missing)}")
        for key, item_spec in spec.items():
            _check(value[key], item_spec, f"{where}.{key}")
    elif isinstance(spec, list):
        if not isinstance(value, list):
            raise _Invalid(where, "should be a JSON array")
        if spec is _POINT and len(value) != 2:
            raise _Invalid(where, "should be a [t_s, bytes] pair")
        for index, item in enumerate(value):
            _check(item, spec[0], f"{where}[{index}]")
    elif spec is _NUMBER:
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not ((isinstance(value, int) or math.isfinite(value)) and abs(value) < _MAX_INT)
        ):
            raise _Invalid(where, "should be a finite number")
    elif spec is int:
        if isinstance(value, bool) or not isinstance(value, int) or not abs(value) < _MAX_INT:
            raise _Invalid(where, "should be an integer")
    elif not isinstance(value, spec):
        raise _Invalid(where, f"should be {_describe(spec)}")


def _describe(spec: Any) -> str:
    if spec is None:
        return "null"
    if isinstance(spec, dict):
        return "a JSON object"
    if isinstance(spec, list):
        return "a JSON array"
    return {str: "a string", bool: "true or false", int: "an integer"}.get(spec, "a number")


def encode(profile: Profile) -> bytes:
    """The bytes of ``profile`` as a profile file: JSON, UTF-8. Strings that are not valid
    Unicode (the surrogates Python makes of undecodable bytes in argv or paths, PEP 383)
    are written as JSON ``\\udcXX`` escapes, so the file stays UTF-8 and reading it back gives
    the same strings: backslashreplace fires only on what UTF-8 cannot encode, lone
    surrogates, and writes them as \\udcXX, inside a JSON string the JSON escape of the same
    character. The one JSON writer: dump(), ``-o p.json`` and ``heatline view --format json``.
    Without indentation: json's C encoder writes only that (with an indent json runs its
    pure-Python encoder, about 4 times slower: 0.12 s of a large program's end of run,
    bench/end_of_run.py); ``heatline view`` is the way to read a profile."""
    log = os.environ.get(MODEL_CHECK_ENV)
    if log:
        _check_model(profile, log)
    return _to_json(profile).encode("utf-8", "backslashreplace") + b"\n"


# The developers' self-check: with this variable naming a file (the integration tests set it,
# tests/integration/conftest.py), every profile written is held against data/model.py, and
# each one that does not match is described in a line appended to that file.
MODEL_CHECK_ENV = "HEATLINE_MODEL_CHECK"


def _check_model(profile: Profile, log: str) -> None:
    """Append what in ``profile`` does not match the model to ``log``. Never raises: the
    write goes on whatever the check finds (or however it fails)."""
    try:
        from heatline.data.model import mismatches  # imports typing: only in this mode

        problems = mismatches(profile)
    except Exception as exc:  # noqa: BLE001 -- a failed check is reported, not raised
        problems = [f"the check failed: {exc!r}"]
    if not problems:
        return
    try:
        with open(log, "a", encoding="utf-8") as file:
            file.write(f"process {os.getpid()}, {profile.get('program')!r}: "
                       + "; ".join(problems) + "\n")
    except OSError:
        pass


def _to_json(value: Any) -> str:
    """``json.dumps(value, ensure_ascii=False, separators=(",", ":"))``, the same text, made by
    the C encoder json.dumps itself uses (the _json module, with the arguments json.dumps gives
    it on CPython 3.9-3.13) without importing json: the json package imports re and compiles
    six patterns as it is imported, 31 M instructions, about a third of what a run of an empty
    program costs heatline (bench/fixed_cost.py). Where _json lacks the encoder, json.dumps."""
    try:
        from _json import encode_basestring, make_encoder
    except ImportError:
        import json

        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    # markers (a fresh dict: circular references are an error), default, the string encoder,
    # indent, key and item separators, sort_keys, skipkeys, allow_nan
    encode = make_encoder({}, _not_serialisable, encode_basestring, None, ":", ",", False, False,
                          True)
    return "".join(encode(value, 0))


def _not_serialisable(value: Any) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def dump(profile: Profile, path: str) -> None:
    """Write ``profile`` to ``path`` as JSON (:func:`encode`), the way :func:`write_bytes`
    writes. Raises OSError if the profile cannot be written."""
    write_bytes(encode(profile), path)


def write_bytes(data: bytes, path: str) -> None:
    """Write ``data`` to ``path``: a temporary file in the directory of the file ``path``
    names (through symlinks), renamed onto that file, so a reader (or an interrupted write)
    never sees half a file, a symlink stays a symlink to the same file, and an existing file
    keeps its permission bits; a new file gets the usual mode (0666 less the umask)."""

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
