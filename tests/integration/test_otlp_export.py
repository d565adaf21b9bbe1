"""The OTLP export (renderers/otlp.py) decoded by opentelemetry-proto's own generated classes
(the `otlp` extra): it parses as the Collector's ExportProfilesServiceRequest with nothing left
over, every dictionary index is in range, its sample types and values are the pprof export's
of the same profile (pprof decoded here from the wire format), its per-function times hold
against the ground truth the target measures itself (tests/targets/otlp_phases.py, checked as
test_accuracy checks a profile), and a profile with a child process has one resource per
process, each with its own pid and its own functions."""

import gzip
import json
import os

import pytest

import test_accuracy
from _tools import require_module

TARGETS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "targets")
TARGET = os.path.join(TARGETS, "otlp_phases.py")
INTERVAL = "0.004"


def _decode(data):
    """The request, checked to be exactly what opentelemetry-proto reads: no unknown fields
    (re-encoded without them it is the same bytes)."""
    require_module("opentelemetry.proto", "otlp")
    from opentelemetry.proto.collector.profiles.v1development.profiles_service_pb2 import (
        ExportProfilesServiceRequest,
    )

    request = ExportProfilesServiceRequest()
    request.ParseFromString(data)
    request.DiscardUnknownFields()
    assert request.SerializeToString() == data
    return request


# Index fields -> the dictionary table they point into.
_TABLES = {"mapping_index": "mapping_table", "location_indices": "location_table",
           "function_index": "function_table", "link_index": "link_table",
           "stack_index": "stack_table", "attribute_indices": "attribute_table"}


def _check_indices(request):
    """Every table's entry 0 is its empty value, and every index anywhere in the request
    (the fields named *_strindex, *_index, *_indices) points inside its table."""
    d = request.dictionary
    assert d.string_table[0] == ""
    for table in ("mapping_table", "location_table", "function_table", "attribute_table",
                  "stack_table"):
        entries = getattr(d, table)
        assert len(entries) >= 1 and entries[0].ByteSize() == 0, table
    assert len(d.link_table) >= 1 and not any(d.link_table[0].trace_id)
    sizes = {table: len(getattr(d, table)) for table in _TABLES.values()}
    sizes["string_table"] = len(d.string_table)
    checked = 0

    def walk(message, where):
        nonlocal checked
        for field, value in message.ListFields():
            if field.name.endswith("_strindex"):
                table = "string_table"
            else:
                table = _TABLES.get(field.name)
            values = list(value) if _repeated(field) else [value]
            if table is not None:
                for index in values:
                    assert 0 <= index < sizes[table], (where, field.name, index)
                    checked += 1
            elif field.message_type is not None:
                for item in values:
                    walk(item, f"{where}.{field.name}")

    walk(request, "request")
    assert checked > 0


def _repeated(field):
    if hasattr(field, "is_repeated"):  # protobuf 6+ (upb) has no `label`
        return field.is_repeated
    return field.label == field.LABEL_REPEATED


def _types(request):
    """[(type, unit)] of the first resource's profiles, in order, each resource's the same."""
    d = request.dictionary
    per_resource = [
        [(d.string_table[p.sample_type.type_strindex], d.string_table[p.sample_type.unit_strindex])
         for p in resource.scope_profiles[0].profiles]
        for resource in request.resource_profiles
    ]
    assert all(types == per_resource[0] for types in per_resource)
    return per_resource[0]


def _frame(request, location_index):
    """(function name, frame type) of a location."""
    d = request.dictionary
    location = d.location_table[location_index]
    function = d.function_table[location.lines[0].function_index]
    kinds = [d.attribute_table[i] for i in location.attribute_indices]
    kind = [a.value.string_value for a in kinds if d.string_table[a.key_strindex]
            == "profile.frame.type"]
    return d.string_table[function.name_strindex], kind[0] if kind else None


def _flat(request, kind, resource=None, python_only=False):
    """{function: summed values} of sample type ``kind`` by each sample's leaf frame (with
    python_only, its innermost Python frame: the function the profile charges the time to)."""
    d = request.dictionary
    out = {}
    resources = request.resource_profiles if resource is None else [resource]
    for item in resources:
        for p in item.scope_profiles[0].profiles:
            if d.string_table[p.sample_type.type_strindex] != kind:
                continue
            for sample in p.samples:
                frames = [_frame(request, i)
                          for i in d.stack_table[sample.stack_index].location_indices]
                if python_only:
                    frames = [f for f in frames if f[1] == "cpython"]
                name = frames[0][0] if frames else "?"
                out[name] = out.get(name, 0) + sum(sample.values)
    return out


def _resource_attributes(resource):
    out = {}
    for attribute in resource.resource.attributes:
        value = attribute.value
        member = value.WhichOneof("value")
        if member == "array_value":
            out[attribute.key] = [v.string_value for v in value.array_value.values]
        else:
            out[attribute.key] = getattr(value, member)
    return out


# --- pprof, read from the wire format (profile.proto) -----------------------------------


def _fields(data):
    """[(field number, value)] of a protobuf message: ints for varints, bytes otherwise."""
    out, at = [], 0
    while at < len(data):
        key, at = _varint(data, at)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, at = _varint(data, at)
        elif wire == 2:
            size, at = _varint(data, at)
            value, at = data[at:at + size], at + size
        elif wire == 1:
            value, at = int.from_bytes(data[at:at + 8], "little"), at + 8
        elif wire == 5:
            value, at = int.from_bytes(data[at:at + 4], "little"), at + 4
        else:
            raise AssertionError(f"wire type {wire}")
        out.append((field, value))
    return out


def _varint(data, at):
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, at


def _ints(value):
    """A repeated varint field's values (packed or not)."""
    if isinstance(value, int):
        return [value]
    out, at = [], 0
    while at < len(value):
        number, at = _varint(value, at)
        out.append(number)
    return out


def _pprof(data):
    """(sample types [(type, unit)], [{function: flat value} per type]) of a gzipped pprof."""
    message = _fields(gzip.decompress(data))
    strings = [v.decode() for f, v in message if f == 6]
    types = [tuple(strings[v] for _, v in _fields(t)) for f, t in message if f == 1]
    names = {}
    for f, v in message:
        if f == 5:
            function = dict(_fields(v))
            names[function[1]] = strings[function.get(2, 0)]
    leaf_function = {}
    for f, v in message:
        if f == 4:
            location = _fields(v)
            line = dict(_fields(next(x for n, x in location if n == 4)))
            leaf_function[dict(location)[1]] = names[line[1]]
    flat = [{} for _ in types]
    for f, v in message:
        if f == 2:
            sample = _fields(v)
            locations = [i for n, x in sample if n == 1 for i in _ints(x)]
            values = [i for n, x in sample if n == 2 for i in _ints(x)]
            name = leaf_function[locations[0]]
            for n, value in enumerate(values):
                if value:
                    flat[n][name] = flat[n].get(name, 0) + value
    return types, flat


def _pprof_name(name):
    return name.replace("<", "(").replace(">", ")")  # pprof's spelling (renderers/pprof.py)


# --- tests ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def phases(tmp_path_factory):
    """The target profiled once: (profile, its truth, the pid it printed, OTLP bytes, pprof
    bytes), the exports rendered by `heatline view` from the profile."""
    require_module("opentelemetry.proto", "otlp")
    import subprocess
    import sys

    tmp = tmp_path_factory.mktemp("otlp")
    path = tmp / "profile.json"

    def run(*args):
        result = subprocess.run([sys.executable, "-m", "heatline", *args],
                                env=dict(os.environ, HEATLINE_TRUTH=str(tmp / "truth.json")),
                                capture_output=True, text=True, timeout=300, check=False)
        assert result.returncode == 0, result.stderr
        return result.stdout

    printed = json.loads(run("-q", "--sampling-interval", INTERVAL, "-o", str(path), TARGET))
    run("view", str(path), "--format", "otlp", "-o", str(tmp / "p.bin"))
    run("view", str(path), "-o", str(tmp / "p.pb.gz"))
    return (json.loads(path.read_text()), json.loads((tmp / "truth.json").read_text()),
            printed["pid"], (tmp / "p.bin").read_bytes(), (tmp / "p.pb.gz").read_bytes())


def test_otlp_export_decodes_with_the_pprof_exports_types_and_top_functions(phases):
    profile, _, pid, otlp, pprof = phases
    request = _decode(otlp)
    _check_indices(request)
    pprof_types, pprof_flat = _pprof(pprof)
    types = _types(request)
    assert types == pprof_types
    assert types[:5] == [("cpu", "nanoseconds"), ("python", "nanoseconds"),
                         ("native", "nanoseconds"), ("system", "nanoseconds"),
                         ("cpu_wait", "nanoseconds")]
    assert ("alloc_space", "bytes") in types  # memory is on by default
    for (kind, _), want in zip(types, pprof_flat):
        got = {_pprof_name(name): value for name, value in _flat(request, kind).items()}
        assert got == want, kind  # every function's value of every type, to the nanosecond
    cpu = {_pprof_name(name): value for name, value in _flat(request, "cpu").items()}
    top = sorted(cpu, key=lambda name: (-cpu[name], name))[:5]
    assert top == sorted(pprof_flat[0], key=lambda name: (-pprof_flat[0][name], name))[:5]
    assert {"score_records", "parse_records", "wait_for_io"} <= set(top), top
    assert cpu["score_records"] > cpu["parse_records"]  # twice the work
    [resource] = request.resource_profiles
    attributes = _resource_attributes(resource)
    assert attributes["service.name"] == profile["program"]
    assert attributes["process.pid"] == pid  # the pid the program printed
    assert resource.scope_profiles[0].scope.name == "heatline"
    first = resource.scope_profiles[0].profiles[0]
    d = request.dictionary
    assert (d.string_table[first.period_type.type_strindex], first.period) == (
        "cpu", round(profile["sampling_interval_s"] * 1e9))
    assert first.duration_nano == round(profile["elapsed_s"] * 1e9)
    assert len({p.profile_id for p in resource.scope_profiles[0].profiles}) == len(types)


@pytest.mark.skipif(bool(os.environ.get("HEATLINE_SANITIZED")),
                    reason="timing is not meaningful under ASan")
def test_otlp_function_times_hold_against_the_ground_truth(phases):
    profile, truth, _, otlp, _ = phases
    request = _decode(otlp)
    measured = {}
    for kind in test_accuracy.KINDS:
        for name, value in _flat(request, kind[:-2], python_only=True).items():
            measured.setdefault(name, {})[kind] = value / 1e9
    test_accuracy._check(truth, measured, test_accuracy.mean_gap_s(profile),
                         test_accuracy.waits_measured(profile))


def test_a_profile_with_a_child_has_one_resource_per_process(run_heatline, tmp_path):
    """A run whose program forks a child: one resource per process, each with its pid (as
    the program printed them) and its own functions; the processes' values together are the
    pprof export's (which has them as one), memory too (from each process's own profile)."""
    require_module("opentelemetry.proto", "otlp")
    from heatline.renderers import pprof

    path = tmp_path / "run.json"
    result = run_heatline("-q", "--sampling-interval", INTERVAL, "-o", str(path), TARGET,
                          "fork", text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    printed = json.loads(result.stdout)
    out = tmp_path / "run.otlp.pb"  # the suffix picks the format
    result = run_heatline("view", str(path), "-o", str(out), text=True)
    assert result.returncode == 0, result.stderr
    request = _decode(out.read_bytes())
    _check_indices(request)
    pprof_types, pprof_flat = _pprof(pprof.render(json.loads(path.read_text())))
    assert _types(request) == pprof_types and ("alloc_space", "bytes") in pprof_types
    for (kind, _), want in zip(pprof_types, pprof_flat):
        got = {_pprof_name(name): value for name, value in _flat(request, kind).items()}
        assert got == want, kind
    assert len(request.resource_profiles) == 2
    parent, child = request.resource_profiles
    assert _resource_attributes(parent)["process.pid"] == printed["pid"]
    assert _resource_attributes(child)["process.pid"] == printed["child"]
    assert _resource_attributes(child)["process.parent_pid"] == printed["pid"]
    parent_cpu = _flat(request, "cpu", parent, python_only=True)
    child_cpu = _flat(request, "cpu", child, python_only=True)
    assert child_cpu.get("child_spin", 0) > 0 and "child_spin" not in parent_cpu
    assert parent_cpu.get("score_records", 0) > 0 and "score_records" not in child_cpu
    # The child spins until its own CPU clock has run 0.3 s: its stacks hold at least that
    # time, but for the sampling gaps at its start and end (a few intervals, randomised).
    assert child_cpu["child_spin"] >= 0.3e9 - 5 * float(INTERVAL) * 1e9, child_cpu


def _synthetic():
    """A profile written out by hand: one thread, a Python frame calling a native function
    of a library the profile maps, memory and GPU kernel tracing on, one line's figures."""
    line = {"line": 3, "source": "work()", "function": "work", "python_s": 1.0,
            "native_s": 0.5, "system_s": 0.0, "cpu_wait_s": 0.25, "alloc_python_bytes": 1000,
            "alloc_native_bytes": 24, "growth_bytes": 512, "gpu_s": 0.125,
            "gpu_copy_bytes": 4096, "gpu_alloc_bytes": 0}
    native = {"file": "/usr/lib/libfoo.so", "name": "foo_kernel", "qualname": "foo_kernel",
              "line": 0, "native": True, "address": 0x7F0000001234,
              "mapping_start": 0x7F0000000000, "mapping_limit": 0x7F0000100000,
              "mapping_offset": 0x1000, "build_id": "ab12cd34"}
    return {
        "program": "app.py", "argv": ["app.py", "--fast"], "python_version": "3.11.7",
        "heatline_version": "1.2.3", "started_at": "2026-01-02T03:04:05.678Z",
        "elapsed_s": 2.0, "sampling_interval_s": 0.01,
        "threads": [{"native_id": 100, "main": True, "name": "MainThread", "python_s": 1.0,
                     "native_s": 0.5, "system_s": 0.0, "cpu_wait_s": 0.25,
                     "unattributed_s": 0.0}],
        "files": {"/app.py": {"lines": [line], "functions": [
            {"qualname": "work", "name": "work", "first_line": 2}]}},
        "stacks": {"frames": [{"file": "/app.py", "name": "work", "qualname": "work",
                               "line": 3}, native],
                   "entries": [{"stack": [0], "thread": 0, "python_s": 1.0, "native_s": 0.0,
                                "system_s": 0.0, "cpu_wait_s": 0.25},
                               {"stack": [0, 1], "thread": 0, "python_s": 0.0,
                                "native_s": 0.5, "system_s": 0.0}],
                   "dropped_s": 0.0},
        "memory": {"enabled": True, "sampling_window_bytes": 65536},
        "gpu": {"enabled": True, "kernel_tracing": True},
    }


def test_a_hand_written_profile_exports_every_field_as_written():
    from heatline.renderers import otlp

    request = _decode(otlp.render(_synthetic()))
    _check_indices(request)
    d = request.dictionary
    for table in ("mapping_table", "location_table", "function_table", "attribute_table",
                  "stack_table"):
        entries = [entry.SerializeToString() for entry in getattr(d, table)]
        assert len(set(entries)) == len(entries), table  # no duplicates
    assert len(set(d.string_table)) == len(d.string_table)
    [resource] = request.resource_profiles
    assert _resource_attributes(resource) == {
        "service.name": "app.py", "process.pid": 100,
        "process.command_args": ["app.py", "--fast"],
        "process.runtime.name": "CPython", "process.runtime.version": "3.11.7"}
    scope = resource.scope_profiles[0]
    assert (scope.scope.name, scope.scope.version) == ("heatline", "1.2.3")
    values = {}
    for p in scope.profiles:
        kind = (d.string_table[p.sample_type.type_strindex],
                d.string_table[p.sample_type.unit_strindex])
        assert p.time_unix_nano == 1767323045678000000  # 2026-01-02T03:04:05.678Z
        assert p.duration_nano == 2_000_000_000
        period = (d.string_table[p.period_type.type_strindex], p.period)
        assert period == {"alloc_space": ("space", 65536), "inuse_space": ("space", 65536),
                          "gpu": ("", 0), "gpu_copy": ("", 0),
                          "gpu_alloc": ("", 0)}.get(kind[0], ("cpu", 10_000_000)), kind
        values[kind] = sorted(
            (tuple(_frame(request, i)[0]
                   for i in d.stack_table[s.stack_index].location_indices), list(s.values))
            for s in p.samples)
    assert values == {
        ("cpu", "nanoseconds"): [(("foo_kernel", "work"), [500_000_000]),
                                 (("work",), [1_250_000_000])],
        ("python", "nanoseconds"): [(("work",), [1_000_000_000])],
        ("native", "nanoseconds"): [(("foo_kernel", "work"), [500_000_000])],
        ("system", "nanoseconds"): [],
        ("cpu_wait", "nanoseconds"): [(("work",), [250_000_000])],
        ("alloc_space", "bytes"): [(("work",), [1024])],
        ("inuse_space", "bytes"): [(("work",), [512])],
        ("gpu", "nanoseconds"): [(("work",), [125_000_000])],
        ("gpu_copy", "bytes"): [(("work",), [4096])],
        ("gpu_alloc", "bytes"): [],
    }
    first = scope.profiles[0].samples[0]
    thread = {d.string_table[a.key_strindex]: a.value
              for a in (d.attribute_table[i] for i in first.attribute_indices)}
    assert thread["thread.id"].int_value == 100
    assert thread["thread.name"].string_value == "main thread 100"
    [native] = [location for location in d.location_table if location.mapping_index]
    assert native.address == 0x7F0000001234
    assert _frame(request, list(d.location_table).index(native)) == ("foo_kernel", "native")
    mapping = d.mapping_table[native.mapping_index]
    assert (mapping.memory_start, mapping.memory_limit, mapping.file_offset) == (
        0x7F0000000000, 0x7F0000100000, 0x1000)
    assert d.string_table[mapping.filename_strindex] == "/usr/lib/libfoo.so"
    [build_id] = [d.attribute_table[i] for i in mapping.attribute_indices]
    assert d.string_table[build_id.key_strindex] == "process.executable.build_id.gnu"
    assert build_id.value.string_value == "ab12cd34"


def test_the_pprof_server_serves_a_windows_cpu_profile_as_otlp(tmp_path):
    """--pprof-server's /debug/otlp/profile?seconds=N: the CPU profile of a window of
    tests/targets/pprof_service.py (hot_function spins on the main thread, a helper thread
    sleeps), as pprof's endpoint gives it: the time types only, ``cpu`` the time on a CPU
    (Python + native) of each stack; hot_function first, the helper's sleep not CPU time."""
    require_module("opentelemetry.proto", "otlp")
    import sys
    import urllib.request

    import test_pprof_server

    if not sys.platform.startswith("linux"):
        pytest.skip("Linux only")
    process, url = test_pprof_server._start(tmp_path)
    try:
        pid = int((tmp_path / "ready").read_text().split()[0])
        window = url.replace("/debug/pprof/", "/debug/otlp/profile?seconds=1")
        with urllib.request.urlopen(window, timeout=120) as answer:
            assert answer.status == 200
            assert answer.headers["Content-Type"] == "application/x-protobuf"
            data = answer.read()
        assert process.poll() is None
    finally:
        process.kill()
        process.communicate()
    request = _decode(data)
    _check_indices(request)
    assert _types(request) == [("cpu", "nanoseconds"), ("python", "nanoseconds"),
                               ("native", "nanoseconds"), ("system", "nanoseconds"),
                               ("cpu_wait", "nanoseconds")]
    [resource] = request.resource_profiles
    assert _resource_attributes(resource)["process.pid"] == pid
    d = request.dictionary
    by_type = {d.string_table[p.sample_type.type_strindex]: {
        (s.stack_index, tuple(s.attribute_indices)): s.values[0] for s in p.samples}
        for p in resource.scope_profiles[0].profiles}
    python, native = by_type["python"], by_type["native"]
    for sample in set(by_type["cpu"]) | set(python) | set(native):  # on a CPU: Python + native
        assert by_type["cpu"].get(sample, 0) == python.get(sample, 0) + native.get(sample, 0)
    cpu = _flat(request, "cpu", python_only=True)
    assert max(cpu, key=cpu.get) == "hot_function", cpu
    assert _flat(request, "system", python_only=True).get("helper", 0) > 0  # it sleeps
