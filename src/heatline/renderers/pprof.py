"""pprof's profile.proto, gzipped, encoded by hand (no protobuf dependency).

Sample types: ``cpu/nanoseconds`` (all time charged to the stack: python + native + system,
i.e. thread time including blocked time) and ``python``, ``native``, ``system`` (nanoseconds)
as separate sample types; with memory on, ``alloc_space/bytes`` and ``inuse_space/bytes``
(growth: allocated and still live at the end), charged to each allocating line as a one-frame
stack (the profile keeps memory per line, not per stack); with GPU kernel tracing,
``gpu/nanoseconds`` (device time), ``gpu_copy/bytes`` and ``gpu_alloc/bytes`` the same way, per
launching line. Every sample has a ``thread`` label (``memory``, ``gpu`` for the per-line ones).
Locations are one per (function, line), so ``-lines`` views work. Names spell ``<module>`` as
``(module)`` (pprof would hide anything in angle brackets). A native function (native frames)
is a Location with its address (an instruction of it the samples saw) in a ``Mapping`` of its
shared library (its address range, file offset, path and GNU build id) where the profile knows
them; its ``Function`` is named already (``has_functions``), so pprof looks nothing up.
"""

from __future__ import annotations

import gzip
from typing import Any

from heatline.data.queries import function_of_line, stacks, thread_name
from heatline.renderers._protobuf import bytes_field as _bytes
from heatline.renderers._protobuf import int_field as _int
from heatline.renderers._protobuf import packed_field as _packed

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: the model imports typing
    from heatline.data.model import Profile, StackFrame

TIME_TYPES = (("cpu", "nanoseconds"), ("python", "nanoseconds"), ("native", "nanoseconds"),
              ("system", "nanoseconds"), ("cpu_wait", "nanoseconds"))
MEMORY_TYPES = (("alloc_space", "bytes"), ("inuse_space", "bytes"))
GPU_TYPES = (("gpu", "nanoseconds"), ("gpu_copy", "bytes"), ("gpu_alloc", "bytes"))


class _Builder:
    def __init__(self) -> None:
        self.strings: dict[str, int] = {"": 0}
        self.functions: dict[tuple[str, str, int], int] = {}
        self.locations: dict[tuple[int, int, int], int] = {}
        self.mappings: dict[tuple[str, int, int, int], int] = {}
        self.out = bytearray()

    def s(self, text: str) -> int:
        if text not in self.strings:
            self.strings[text] = len(self.strings)
        return self.strings[text]

    def location(self, frame: StackFrame) -> int:
        # pprof drops "<...>" from names as C++ template arguments: "<module>" would show
        # as "<unknown>", so angle brackets become parentheses.
        name = (frame.get("qualname") or frame.get("name") or "?").replace("<", "(")
        name = name.replace(">", ")")
        key = (name, frame.get("file", ""), 0)
        function_id = self.functions.get(key)
        if function_id is None:
            function_id = self.functions[key] = len(self.functions) + 1
            self.out += _bytes(5, _int(1, function_id) + _int(2, self.s(name))
                               + _int(3, self.s(name)) + _int(4, self.s(key[1])))
        line = int(frame.get("line", 0))
        address = int(frame.get("address", 0))
        location_id = self.locations.get((function_id, line, address))
        if location_id is None:
            location_id = self.locations[(function_id, line, address)] = len(self.locations) + 1
            self.out += _bytes(4, _int(1, location_id) + _int(2, self.mapping(frame))
                               + _int(3, address)
                               + _bytes(4, _int(1, function_id) + _int(2, line)))
        return location_id

    def mapping(self, frame: StackFrame) -> int:
        """The id of the Mapping a native frame's address was in (0: none known)."""
        if "mapping_start" not in frame:
            return 0
        key = (frame.get("file", ""), int(frame["mapping_start"]), int(frame["mapping_limit"]),
               int(frame["mapping_offset"]))
        mapping_id = self.mappings.get(key)
        if mapping_id is None:
            mapping_id = self.mappings[key] = len(self.mappings) + 1
            self.out += _bytes(3, _int(1, mapping_id) + _int(2, key[1]) + _int(3, key[2])
                               + _int(4, key[3]) + _int(5, self.s(key[0]))
                               + _int(6, self.s(frame.get("build_id", "")))
                               + _int(7, 1))  # has_functions: named already
        return mapping_id

    def sample(self, locations: list[int], values: list[int], thread: str) -> None:
        label = _bytes(3, _int(1, self.s("thread")) + _int(2, self.s(thread)))
        self.out += _bytes(2, _packed(1, locations) + _packed(2, values) + label)


def encode(profile: Profile, *, what: str = "all") -> bytes:
    """The uncompressed profile.proto message. what: "all" (the file: time, and memory and GPU
    when the profile has them); "cpu" (the pull endpoint's CPU profile, as Go's: the first type,
    ``cpu``, is the time on a CPU only, Python + native, without the blocked ``system`` time
    and the waits for a CPU (``cpu_wait``), each its own type; no memory or GPU); "heap" (the
    memory types only, per line; ``inuse_space`` the default, as in Go's heap profile)."""
    memory = what != "cpu" and bool((profile.get("memory") or {}).get("enabled"))
    gpu = what == "all" and bool((profile.get("gpu") or {}).get("kernel_tracing"))
    time_types = () if what == "heap" else TIME_TYPES
    types = time_types + (MEMORY_TYPES if memory else ()) + (GPU_TYPES if gpu else ())
    b = _Builder()
    head = bytearray()
    for kind, unit in types:
        head += _bytes(1, _int(1, b.s(kind)) + _int(2, b.s(unit)))
    frames = (profile.get("stacks") or {}).get("frames", [])
    zeros = [0] * (len(types) - len(TIME_TYPES))
    for stack in stacks(profile) if time_types else ():
        parts = [round(stack.python_s * 1e9), round(stack.native_s * 1e9),
                 round(stack.system_s * 1e9), round(stack.cpu_wait_s * 1e9)]
        if not any(parts) or not stack.frames:
            continue
        leaf_first = [b.location(frames[index]) for index in reversed(stack.frames)]
        first = parts[0] + parts[1] if what == "cpu" else sum(parts)
        b.sample(leaf_first, [first, *parts, *zeros], thread_name(profile, stack.thread))
    per_line = []  # (thread label, values of the extra sample types, from a line's fields)
    if memory:
        # Byte counts are integers in profiles heatline writes; round() keeps a hand-edited
        # 2.5 from failing the varint encoding.
        per_line.append(("memory", lambda line: [
            round(line.get("alloc_python_bytes", 0) + line.get("alloc_native_bytes", 0)),
            round(max(line.get("growth_bytes", 0), 0)),
        ]))
    if gpu:
        per_line.append(("gpu", lambda line: [
            round(line.get("gpu_s", 0) * 1e9), round(line.get("gpu_copy_bytes", 0)),
            round(line.get("gpu_alloc_bytes", 0)),
        ]))
    offset = len(time_types)
    for label, values_of in per_line:
        for path, entry in (profile.get("files") or {}).items():
            for line in entry.get("lines", []):
                values = values_of(line)
                if not any(v > 0 for v in values):
                    continue
                function = function_of_line(entry, line)
                location = b.location({"qualname": function, "file": path, "line": line["line"]})
                row = [0] * len(types)
                row[offset:offset + len(values)] = values
                b.sample([location], row, label)
        offset += len(values_of({}))
    tail = bytearray()
    tail += _int(10, round(float(profile.get("elapsed_s", 0)) * 1e9))
    if what == "heap":
        # Go's heap profiles: a period of the sampling rate in bytes
        window = (profile.get("memory") or {}).get("sampling_window_bytes", 0)
        tail += _bytes(11, _int(1, b.s("space")) + _int(2, b.s("bytes")))
        tail += _int(12, int(window))
        tail += _int(14, b.s("inuse_space"))
    else:
        tail += _bytes(11, _int(1, b.s("cpu")) + _int(2, b.s("nanoseconds")))
        tail += _int(12, round(float(profile["sampling_interval_s"]) * 1e9))  # a required key
        tail += _int(14, b.s("cpu"))  # default_sample_type: otherwise pprof shows the last
    # The string table goes last so that it holds every string used above (dicts keep
    # insertion order, which is index order).
    for text in b.strings:
        tail += _bytes(6, text.encode("utf-8", "replace"))
    return bytes(head + b.out + tail)


def render(profile: Profile, view: Any = None) -> bytes:
    return gzip.compress(encode(profile), mtime=0)
