"""The C engine's layout: its rooms depend on each other without a cycle, the engine's
state is private to the engine room, and every file says what its room is for.

A room is a .c file and its .h (foo.c + foo.h); room A depends on room B when A's .c or .h
includes B's .h. Read from the #include lines, so it checks the tree as it is."""

import re
from pathlib import Path

import pytest

# Nothing checked here depends on the CPython version: runs on the main CPython and under ASan,
# not on every version (Makefile, suite-3.X).
pytestmark = pytest.mark.interpreter_independent

NATIVE = Path(__file__).resolve().parents[2] / "src" / "heatline" / "_native"
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)


def _sources():
    return sorted(p for p in NATIVE.iterdir() if p.suffix in (".c", ".h"))


def _includes(path):
    return INCLUDE.findall(path.read_text(encoding="utf-8"))


def _dependencies():
    """room -> the rooms it includes (its own header aside)."""
    graph = {}
    for path in _sources():
        room = path.stem
        for header in _includes(path):
            if not (NATIVE / header).exists():
                continue  # CPython's own (internal/pycore_*.h)
            other = Path(header).stem
            if other != room:
                graph.setdefault(room, set()).add(other)
        graph.setdefault(room, set())
    return graph


def _find_cycle(graph):
    state, path = {}, []

    def visit(room):
        state[room] = "open"
        path.append(room)
        for other in sorted(graph.get(room, ())):
            if state.get(other) == "open":
                return path[path.index(other):] + [other]
            if other not in state:
                cycle = visit(other)
                if cycle:
                    return cycle
        state[room] = "done"
        path.pop()
        return None

    for room in sorted(graph):
        if room not in state:
            cycle = visit(room)
            if cycle:
                return cycle
    return None


def test_find_cycle_sees_a_cycle():
    assert _find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


def test_no_include_cycle_between_rooms():
    graph = _dependencies()
    assert {"engine", "sampler", "memory", "gpu", "nvml", "cupti", "module"} <= set(graph)
    assert _find_cycle(graph) is None


def test_engine_state_is_private_to_the_engine_room():
    """Only engine.c sees the sampler's state; the binding talks to engine.h, the parts to
    engine_part.h (never to engine.h, which is the binding's)."""
    users = {p.name for p in _sources() if "sampler.h" in _includes(p)}
    assert users == {"engine.c", "sampler.c"}
    assert "engine.h" in _includes(NATIVE / "module.c")
    for part in ("memory.c", "gpu.c", "cupti.c", "control.c", "periodic.c"):
        assert "engine_part.h" in _includes(NATIVE / part), part
    engine_h_users = {p.name for p in _sources() if "engine.h" in _includes(p)}
    assert engine_h_users == {"engine.c", "module.c", "convert.c", "convert.h"}


def test_the_binding_reaches_the_engine_through_engine_h_only():
    """module.c (arguments and calls) and convert.c (results) include no header of the engine's
    rooms but engine.h: what they need of a part (pause's record, the periodic callback,
    SIGTERM's chaining, the parts' results) goes through an engine function or the snapshot
    view, so a part can change without the binding knowing. modhooks.c is the binding's too
    (torch's module hooks, Python objects in and out): module.c hands it the engine's label
    calls."""
    binding = {"module.c": {"engine.h", "convert.h", "modhooks.h"},
               "convert.c": {"engine.h", "convert.h"},
               "convert.h": {"engine.h"}}
    for name, allowed in binding.items():
        ours = {h for h in _includes(NATIVE / name) if (NATIVE / h).exists()}
        assert ours == allowed, name


def test_each_gpu_library_has_a_room_of_its_own():
    """NVML is bound and called from nvml.c only, CUPTI from cupti.c only; gpu.c is the glue that
    loads both and drives them (gpu_abi.h declares what both use)."""
    for path in _sources():
        text = path.read_text(encoding="utf-8")
        if path.name == "gpu_abi.h":
            continue
        if re.search(r"\bhl_nvml\w*_fn\b", text):
            assert path.name == "nvml.c", path.name
        if re.search(r"\bhl_cupti\w*_fn\b", text):
            assert path.name == "cupti.c", path.name


def test_every_file_names_its_room_in_its_header_comment():
    for path in _sources():
        text = path.read_text(encoding="utf-8")
        assert text.startswith(f"/* {path.name}: "), path.name


def test_the_scope_rule_lives_in_one_room():
    """Which files are user code is decided in scope.c alone (its rule in scope.h's header);
    the walker only asks, and heatline/engine/scope.py only computes the directories it is given."""
    defining = {
        p.name for p in _sources()
        if re.search(r"^int hl_scope_is_user\([^;]*\{", p.read_text(encoding="utf-8"), re.MULTILINE)
    }
    assert defining == {"scope.c"}
    pseudo_file_rule = {p.name for p in _sources() if "<ipython-input-" in p.read_text("utf-8")}
    assert pseudo_file_rule <= {"scope.c", "scope.h"} and "scope.c" in pseudo_file_rule
    header = (NATIVE / "scope.h").read_text(encoding="utf-8").split("*/", 1)[0]
    for part in ("--profile-exclude", "--profile-only", "--profile-all", "pseudo-file"):
        assert part in header, part
