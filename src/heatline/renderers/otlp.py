"""The OpenTelemetry profiles signal: an OTLP ``ExportProfilesServiceRequest``
(``opentelemetry.proto.collector.profiles.v1development``, the message layout of
opentelemetry-proto 1.45.0), binary protobuf encoded by hand (renderers/_protobuf.py, shared
with pprof.py; no opentelemetry dependency). It is the body the Collector's OTLP receiver takes
over HTTP: ``POST /v1development/profiles`` with ``Content-Type: application/x-protobuf``.

Layout: one ``ResourceProfiles`` per process (a merged profile's processes each, by the ``pid``
of their threads; the main process first), its resource attributes ``service.name`` (the
profile's ``program``), ``process.pid``, ``process.parent_pid``, ``process.command_args``,
``process.runtime.name``/``version`` and ``host.name`` where the profile records its host; one
``ScopeProfiles`` (scope ``heatline`` and its version) holding one ``Profile`` per sample type,
as OTLP gives each profile a single type: ``cpu`` (all time charged to the stack, as pprof's
``cpu``), ``python``, ``native``, ``system``, ``cpu_wait`` (nanoseconds); with memory on,
``alloc_space`` and ``inuse_space`` (bytes, per allocating line); with GPU kernel tracing,
``gpu`` (nanoseconds), ``gpu_copy`` and ``gpu_alloc`` (bytes), per launching line. The
pprof export's sample types, with the same values: a function's total of a type is the same in
both. A sample is a stack (leaf first) with its thread as attributes ``thread.id`` and
``thread.name``, and one value. Every table (strings, functions, locations, mappings, stacks,
attributes, links) is in the request's one ``ProfilesDictionary``, entry 0 the empty one.
Locations are one per (function, line, address); a native frame's location has its address in
a ``Mapping`` of its library (range, file offset, path, and its GNU build id as the attribute
``process.executable.build_id.gnu``); each location says its kind in ``profile.frame.type``
(``cpython`` or ``native``). Function names are the profile's qualnames as they are
(``<module>`` included).
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timezone

from heatline.data.queries import function_of_line, stacks, thread_name
from heatline.renderers._protobuf import bytes_field as _bytes
from heatline.renderers._protobuf import fixed64_field as _fixed64
from heatline.renderers._protobuf import int_field as _int
from heatline.renderers._protobuf import key, varint
from heatline.renderers._protobuf import packed_field as _packed
from heatline.renderers._protobuf import string_field as _string
from heatline.renderers.pprof import GPU_TYPES, MEMORY_TYPES, TIME_TYPES

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: the model imports typing
    from typing import Any

    from heatline.data.model import Profile, StackFrame

CONTENT_TYPE = "application/x-protobuf"


def _any_value(value: Any) -> bytes:
    """common.v1.AnyValue of a str, int or list of str. The oneof's member is written even
    when it is 0 or "", so that the value's type is known."""
    if isinstance(value, int):
        return key(3, 0) + varint(value)
    if isinstance(value, list):
        return _bytes(5, b"".join(_bytes(1, _any_value(item)) for item in value))
    return _bytes(1, str(value).encode("utf-8", "replace"))


def _key_value(name: str, value: Any) -> bytes:
    """common.v1.KeyValue."""
    return _string(1, name) + _bytes(2, _any_value(value))


class _Dictionary:
    """The request's ProfilesDictionary: each table's entries, deduplicated, entry 0 empty."""

    def __init__(self) -> None:
        self.strings: dict[str, int] = {"": 0}
        self.mappings: dict[tuple, int] = {(): 0}
        self.mapping_out = [b""]
        self.functions: dict[tuple[str, str], int] = {("", ""): 0}
        self.function_out = [b""]
        self.locations: dict[tuple, int] = {(): 0}
        self.location_out = [b""]
        self.stacks: dict[tuple[int, ...], int] = {(): 0}
        self.stack_out = [b""]
        self.attributes: dict[tuple[str, Any], int] = {("", None): 0}
        self.attribute_out = [b""]

    def s(self, text: str) -> int:
        if text not in self.strings:
            self.strings[text] = len(self.strings)
        return self.strings[text]

    def attribute(self, name: str, value: Any) -> int:
        index = self.attributes.get((name, value))
        if index is None:
            index = self.attributes[(name, value)] = len(self.attribute_out)
            self.attribute_out.append(_int(1, self.s(name)) + _bytes(2, _any_value(value)))
        return index

    def function(self, name: str, path: str) -> int:
        """A Function: its name (the qualname) also its system name, as Python has no other."""
        index = self.functions.get((name, path))
        if index is None:
            index = self.functions[(name, path)] = len(self.function_out)
            self.function_out.append(_int(1, self.s(name)) + _int(2, self.s(name))
                                     + _int(3, self.s(path)))
        return index

    def mapping(self, frame: StackFrame) -> int:
        """The index of the Mapping a native frame's address was in (0: none known)."""
        if "mapping_start" not in frame:
            return 0
        build_id = str(frame.get("build_id") or "")
        found = (str(frame.get("file", "")), _whole(frame["mapping_start"]),
                 _whole(frame["mapping_limit"]), _whole(frame["mapping_offset"]), build_id)
        index = self.mappings.get(found)
        if index is None:
            index = self.mappings[found] = len(self.mapping_out)
            attributes = ([self.attribute("process.executable.build_id.gnu", build_id)]
                          if build_id else [])
            self.mapping_out.append(_int(1, found[1]) + _int(2, found[2]) + _int(3, found[3])
                                    + _int(4, self.s(found[0])) + _packed(5, attributes))
        return index

    def location(self, frame: StackFrame) -> int:
        name = str(frame.get("qualname") or frame.get("name") or "?")
        native = bool(frame.get("native"))
        function = self.function(name, str(frame.get("file", "")))
        line = _whole(frame.get("line", 0))
        address = _whole(frame.get("address", 0))
        mapping = self.mapping(frame)
        found = (function, line, address, mapping, native)
        index = self.locations.get(found)
        if index is None:
            index = self.locations[found] = len(self.location_out)
            kind = self.attribute("profile.frame.type", "native" if native else "cpython")
            self.location_out.append(_int(1, mapping) + _int(2, address)
                                     + _bytes(3, _int(1, function) + _int(2, line))
                                     + _packed(4, [kind]))
        return index

    def stack(self, leaf_first: list[int]) -> int:
        found = tuple(leaf_first)
        index = self.stacks.get(found)
        if index is None:
            index = self.stacks[found] = len(self.stack_out)
            self.stack_out.append(_packed(1, leaf_first))
        return index

    def encode(self) -> bytes:
        out = bytearray()
        for field, table in ((1, self.mapping_out), (2, self.location_out),
                             (3, self.function_out)):
            for entry in table:
                out += _bytes(field, entry)
        # link_table[0]: the empty link, its ids at their full lengths of zeros (the
        # proto's advice for codecs that check the lengths).
        out += _bytes(4, _bytes(1, bytes(16)) + _bytes(2, bytes(8)))
        for text in self.strings:  # insertion order is index order
            out += _bytes(5, text.encode("utf-8", "replace"))
        for entry in self.attribute_out:
            out += _bytes(6, entry)
        for entry in self.stack_out:
            out += _bytes(7, entry)
        return bytes(out)


def _number(value: Any) -> float:
    """A number of the profile as a float (0 for anything that is not a finite number)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        number = float(value)
        return number if number - number == 0 else 0.0  # inf and nan: 0
    return 0.0


def _whole(value: Any) -> int:
    """A non-negative integer of a number in the profile (0 for anything else)."""
    return max(round(_number(value)), 0)


def _epoch_ns(profile: Profile) -> int:
    """The profile's start (``started_at``, ISO 8601 UTC) in nanoseconds since the epoch."""
    text = str(profile.get("started_at") or "")
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return 0
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    since = moment - datetime(1970, 1, 1, tzinfo=timezone.utc)  # exact: no float seconds
    return max((since.days * 86400 + since.seconds) * 10**9 + since.microseconds * 1000, 0)


class _Process:
    """One ResourceProfiles: its resource attributes and its samples per sample type."""

    def __init__(self, attributes: list[tuple[str, Any]], start_ns: int, duration_ns: int,
                 count: int) -> None:
        self.attributes = attributes
        self.start_ns = start_ns
        self.duration_ns = duration_ns
        # per sample type: {(stack index, attribute indices): value}
        self.samples: list[dict[tuple[int, tuple[int, ...]], int]] = [{} for _ in range(count)]

    def add(self, type_index: int, stack: int, attributes: tuple[int, ...], value: int) -> None:
        if value > 0:
            table = self.samples[type_index]
            table[(stack, attributes)] = table.get((stack, attributes), 0) + value


def _main_pid(profile: Profile) -> int:
    """A profile's process id: its first process's, the attached one's, or its main thread's
    kernel id (Linux's thread id of a main thread is the process id); 0 when unknown."""
    processes = profile.get("processes") or []
    if processes:
        return _whole(processes[0].get("pid", 0))
    for thread in profile.get("threads", []):
        if "pid" in thread:  # the parts of a run that exec'd, merged as one process
            return _whole(thread["pid"])
    attached = profile.get("attached") or {}
    if attached.get("pid"):
        return _whole(attached["pid"])
    for thread in profile.get("threads", []):
        if thread.get("main") and thread.get("python", True) is not False:
            return _whole(thread.get("native_id", 0))
    return 0


def _runtime(profile: Profile) -> list[tuple[str, Any]]:
    version = str(profile.get("python_version") or "").split(" ")[0]
    return [("process.runtime.name", "CPython"), ("process.runtime.version", version)] \
        if version else []


def _processes(profile: Profile, count: int) -> tuple[dict[int, _Process], list[int]]:
    """The profile's processes by pid (in order: the main one first)."""
    start_ns = _epoch_ns(profile)
    program = str(profile.get("program") or "python")
    host = profile.get("host")  # type: ignore[typeddict-item]
    common = [("host.name", host)] if isinstance(host, str) and host else []
    by_pid: dict[int, _Process] = {}
    rows = profile.get("processes") or []
    if not rows:
        pid = _main_pid(profile)
        attributes = [("service.name", program)]
        if pid:
            attributes.append(("process.pid", pid))
        argv = [str(arg) for arg in profile.get("argv") or []]
        if argv:
            attributes.append(("process.command_args", argv))
        by_pid[pid] = _Process(attributes + _runtime(profile) + common, start_ns,
                               _whole(_number(profile.get("elapsed_s")) * 1e9), count)
        return by_pid, [pid]
    for row in rows:
        pid = _whole(row.get("pid", 0))
        attributes: list[tuple[str, Any]] = [("service.name", program), ("process.pid", pid)]
        if row.get("ppid"):
            attributes.append(("process.parent_pid", _whole(row["ppid"])))
        argv = [str(arg) for arg in row.get("argv") or []]
        if argv:
            attributes.append(("process.command_args", argv))
        role = row.get("role")
        if role:
            attributes.append(("heatline.process.role", str(role)))
        own_host = row.get("host")  # type: ignore[typeddict-item]
        own = [("host.name", own_host)] if isinstance(own_host, str) and own_host else common
        offset_ns = _whole(_number(row.get("start_s")) * 1e9)
        by_pid.setdefault(pid, _Process(
            attributes + _runtime(profile) + own, start_ns + offset_ns,
            _whole(_number(row.get("elapsed_s")) * 1e9), count))
    return by_pid, list(by_pid)


def _types(profile: Profile, what: str) -> tuple[tuple[str, str], ...]:
    if what == "cpu":
        return TIME_TYPES
    memory = bool((profile.get("memory") or {}).get("enabled"))
    gpu = bool((profile.get("gpu") or {}).get("kernel_tracing"))
    return TIME_TYPES + (MEMORY_TYPES if memory else ()) + (GPU_TYPES if gpu else ())


def _per_line_values(kind: str, line: dict) -> list[int]:
    """The memory or GPU sample types' values of a line (``kind``: "memory" or "gpu")."""
    if kind == "memory":
        return [_whole(_number(line.get("alloc_python_bytes"))
                       + _number(line.get("alloc_native_bytes"))),
                _whole(line.get("growth_bytes"))]
    return [_whole(_number(line.get("gpu_s")) * 1e9), _whole(line.get("gpu_copy_bytes")),
            _whole(line.get("gpu_alloc_bytes"))]


def encode(profile: Profile, *, what: str = "all") -> bytes:
    """The ExportProfilesServiceRequest message of ``profile``. what: "all" (the file: time,
    and memory and GPU when the profile has them); "cpu" (the pull endpoint's window, as
    pprof's: the time types only, ``cpu`` the time on a CPU, Python + native, without the
    blocked ``system`` time and the waits for a CPU)."""
    types = _types(profile, what)
    d = _Dictionary()
    by_pid, order = _processes(profile, len(types))
    frames = (profile.get("stacks") or {}).get("frames", [])
    per_thread: dict[int, tuple[_Process, tuple[int, ...]]] = {}
    for stack in stacks(profile):
        parts = [_whole(stack.python_s * 1e9), _whole(stack.native_s * 1e9),
                 _whole(stack.system_s * 1e9), _whole(stack.cpu_wait_s * 1e9)]
        if not stack.frames or not any(parts):
            continue
        if stack.thread not in per_thread:
            per_thread[stack.thread] = _thread(profile, stack.thread, d, by_pid, order)
        process, attributes = per_thread[stack.thread]
        stack_index = d.stack([d.location(frames[index]) for index in reversed(stack.frames)])
        process.add(0, stack_index, attributes,
                    parts[0] + parts[1] if what == "cpu" else sum(parts))
        for n, value in enumerate(parts):
            process.add(1 + n, stack_index, attributes, value)
    offset = len(TIME_TYPES)
    for kind, kinds in (("memory", MEMORY_TYPES), ("gpu", GPU_TYPES)):
        if not set(kinds) <= set(types):
            continue
        for pid, files in _files_per_process(profile, order):
            for path, entry in files.items():
                for line in entry.get("lines", []):
                    values = _per_line_values(kind, line)
                    if not any(values):
                        continue
                    location = d.location({"qualname": function_of_line(entry, line),
                                           "file": path, "line": line["line"]})
                    stack_index = d.stack([location])
                    for n, value in enumerate(values):
                        by_pid[pid].add(offset + n, stack_index, (), value)
        offset += len(kinds)
    scope = _string(1, "heatline") + _string(2, str(profile.get("heatline_version") or ""))
    interval_ns = _whole(_number(profile.get("sampling_interval_s")) * 1e9)
    window = _whole((profile.get("memory") or {}).get("sampling_window_bytes", 0))
    out = bytearray()
    for pid in order:
        process = by_pid[pid]
        profiles = bytearray()
        for n, (kind, unit) in enumerate(types):
            body = bytearray(_bytes(1, _int(1, d.s(kind)) + _int(2, d.s(unit))))
            for (stack_index, attributes), value in process.samples[n].items():
                body += _bytes(2, _int(1, stack_index) + _packed(2, list(attributes))
                               + _packed(4, [value]))
            body += _fixed64(3, process.start_ns) + _int(4, process.duration_ns)
            if (kind, unit) in TIME_TYPES:
                body += _bytes(5, _int(1, d.s("cpu")) + _int(2, d.s("nanoseconds")))
                body += _int(6, interval_ns)
            elif (kind, unit) in MEMORY_TYPES and window:
                body += _bytes(5, _int(1, d.s("space")) + _int(2, d.s("bytes")))
                body += _int(6, window)
            body += _bytes(7, _profile_id(profile, pid, kind))
            profiles += _bytes(2, bytes(body))
        resource = b"".join(_bytes(1, _key_value(name, value))
                            for name, value in process.attributes)
        out += _bytes(1, _bytes(1, resource) + _bytes(2, _bytes(1, scope) + bytes(profiles)))
    out += _bytes(2, d.encode())
    return bytes(out)


def _thread(profile: Profile, index: int, d: _Dictionary, by_pid: dict[int, _Process],
            order: list[int]) -> tuple[_Process, tuple[int, ...]]:
    """The process a thread's samples go to (by the thread's ``pid`` in a merged profile;
    the main process otherwise) and their attributes: ``thread.id``, ``thread.name``."""
    threads = profile.get("threads", [])
    record = threads[index] if 0 <= index < len(threads) else {}
    tid = _whole(record.get("native_id", 0))
    attributes = sorted(([d.attribute("thread.id", tid)] if tid else [])
                        + [d.attribute("thread.name", thread_name(profile, index))])
    pid = _whole(record["pid"]) if "pid" in record else order[0]
    if pid not in by_pid:  # a thread of a process the profile does not list
        main = by_pid[order[0]]
        by_pid[pid] = _Process([("service.name", str(profile.get("program") or "python")),
                                ("process.pid", pid)], main.start_ns, main.duration_ns,
                               len(main.samples))
        order.append(pid)
    return by_pid[pid], tuple(attributes)


def _files_per_process(profile: Profile, order: list[int]) -> list[tuple[int, dict]]:
    """(pid, files) whose lines give the per-line sample types: each process's own profile's
    where the merged profile keeps all of them, else the profile's files, as the main
    process's."""
    own = profile.get("process_profiles") or {}
    rows = profile.get("processes") or []
    pids = [_whole(row.get("pid", 0)) for row in rows]
    if rows and all(str(pid) in own and isinstance(own[str(pid)], dict) for pid in pids):
        return [(pid, own[str(pid)].get("files") or {}) for pid in pids]
    return [(order[0], profile.get("files") or {})]


def _profile_id(profile: Profile, pid: int, kind: str) -> bytes:
    """A 16-byte id, the same for the same profile, process and sample type."""
    seed = f"{profile.get('started_at')}\0{profile.get('program')}\0{pid}\0{kind}"
    return hashlib.blake2b(seed.encode("utf-8", "replace"), digest_size=16).digest()


def render(profile: Profile, view: Any = None) -> bytes:
    return encode(profile)
