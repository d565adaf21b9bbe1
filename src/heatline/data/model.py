"""The profile (docs/profile-format.md) as types: one TypedDict per object of the format, and
``mismatches``, which checks a profile against them exactly (every required key, no key the
model lacks, every value of its type).

The writers (build.py, gpu.py, memory.py, merge.py, summary.py, run/attached.py, cli/attach.py)
and the readers (the renderers, summary.py, queries.py) name these types in their annotations.
They import this module only for type checkers (``if TYPE_CHECKING:``): defining TypedDicts
imports typing, which costs a run's end about 4 ms, so nothing imports this module at run
time but ``mismatches``' callers (the tests).

A key the format calls optional (absent from older files, or present only in some profiles:
merged ones, attached ones, runs with native frames) is in a ``total=False`` class; the rest
are required. ``float`` means any JSON number (an integer too, never true/false), as a JSON
reader gives it back; ``int`` an integer. A ``tuple[...]`` is a fixed-length JSON array, such
as a timeline's ``[t_s, bytes]`` point. ``memory`` and ``gpu`` are one of two shapes: off
(``{"enabled": false}`` alone) or on (every total).

Python 3.9's typing has TypedDict (with ``__required_keys__``) and Literal but neither
NotRequired nor ``X | Y`` at run time: hence the ``total=False`` subclasses, Optional and
Union."""

import math
import typing
from typing import Any, Literal, Optional, TypedDict, Union

# --- Shared pieces -----------------------------------------------------------------------

# A timeline's point: [t_s, value] (docs/profile-format.md, "Timelines").
MemoryPoint = tuple[float, int]
GpuPoint = tuple[float, float]
# profiled_periods: [start_s, end_s].
Period = tuple[float, float]


class Place(TypedDict):
    """Where and when a peak was reached: the user line allocating then."""

    file: str
    line: int
    t_s: float


class PeakPlace(Place, total=False):
    """``peak_at`` and ``main_peak_at``: a merged profile's also names the process."""

    pid: int


class NativeFunction(TypedDict):
    """An entry of a line's, function's or native thread's ``native_functions``."""

    symbol: str
    library: Optional[str]
    seconds: float


class Leak(TypedDict):
    likelihood: float
    growth_bytes_per_s: float


# --- Lines and functions -----------------------------------------------------------------


class _CpuWaitFields(TypedDict, total=False):
    """Waiting for a CPU (files written before it was measured lack it)."""

    cpu_wait_s: float
    cpu_wait_pct: float


class TimeFields(_CpuWaitFields):
    """Time charged, in seconds and as shares of all attributed time."""

    python_s: float
    native_s: float
    system_s: float
    python_pct: float
    native_pct: float
    system_pct: float


class MemoryFields(TypedDict):
    """The memory fields of lines and functions."""

    alloc_python_bytes: int
    alloc_native_bytes: int
    freed_bytes: int
    growth_bytes: int
    peak_bytes: int
    copy_bytes: int
    timeline: list[MemoryPoint]
    leak: Optional[Leak]


class GpuFields(TypedDict):
    """The GPU fields of lines and functions."""

    gpu_s: float
    gpu_launches: int
    gpu_copy_bytes: int
    gpu_copy_h2d_bytes: int
    gpu_copy_d2h_bytes: int
    gpu_alloc_bytes: int


class _LineRequired(TimeFields, MemoryFields, GpuFields):
    line: int
    source: str


class LineRecord(_LineRequired, total=False):
    """An entry of a file's ``lines``."""

    function: Optional[str]  # schema 3 files lack it
    native_functions: list[NativeFunction]


class _FunctionRequired(TimeFields, MemoryFields, GpuFields):
    name: str
    qualname: str
    first_line: int


class FunctionRecord(_FunctionRequired, total=False):
    """An entry of a file's ``functions``."""

    native_functions: list[NativeFunction]


class FileRecord(TimeFields):
    """A value of ``files``."""

    lines: list[LineRecord]
    functions: list[FunctionRecord]


# --- Threads and stacks ------------------------------------------------------------------


class _ThreadRequired(TypedDict):
    native_id: int
    main: bool
    python_s: float
    native_s: float
    system_s: float
    unattributed_s: float
    cpu_s: float


class ThreadRecord(_ThreadRequired, total=False):
    """An entry of ``threads``."""

    cpu_wait_s: float
    engine_wait_s: float
    # The thread's name: threading's Thread.name, else the kernel's; absent if unread.
    name: str
    # The kernel's name for it when first seen (/proc/self/task/TID/comm).
    comm: str
    # A thread without a Python thread state (native frames) has these two.
    python: Literal[False]
    native_functions: list[NativeFunction]
    # Merged profiles: the process the thread was in (a child's, or a later exec part's).
    pid: int


class FunctionFrame(TypedDict):
    """A frame of ``stacks.frames``: a function at a line."""

    file: str
    name: str
    qualname: str
    line: int


class _NativeFrameRequired(FunctionFrame):
    native: Literal[True]


class NativeFrame(_NativeFrameRequired, total=False):
    """A native function's frame; where it was in memory when known."""

    address: int
    mapping_start: int
    mapping_limit: int
    mapping_offset: int
    build_id: str


class _ElidedFrameRequired(FunctionFrame):
    elided: int
    elided_max: int
    functions_kept: bool


class ElidedFrame(_ElidedFrameRequired, total=False):
    """The marker of a deep stack's elided middle."""

    outer_unknown: Literal[True]


StackFrame = Union[FunctionFrame, NativeFrame, ElidedFrame]


class _StackEntryRequired(TypedDict):
    stack: list[int]
    thread: int
    python_s: float
    native_s: float
    system_s: float


class StackEntry(_StackEntryRequired, total=False):
    """An entry of ``stacks.entries``."""

    cpu_wait_s: float


class Stacks(TypedDict):
    """``stacks``."""

    frames: list[StackFrame]
    entries: list[StackEntry]
    dropped_s: float


# --- Top-level sections ------------------------------------------------------------------


class _TotalsRequired(TypedDict):
    python_s: float
    native_s: float
    system_s: float
    attributed_s: float
    unattributed_s: float


class Totals(_TotalsRequired, total=False):
    """``totals``."""

    cpu_wait_s: float


class MemoryOff(TypedDict):
    enabled: Literal[False]


class MemoryOn(TypedDict):
    """``memory`` of a run that profiled memory."""

    enabled: Literal[True]
    sampling_window_bytes: int
    alloc_python_bytes: int
    alloc_native_bytes: int
    freed_bytes: int
    live_bytes_at_end: int
    copy_bytes: int
    unattributed_alloc_bytes: int
    unattributed_copy_bytes: int
    samples: int
    untracked_samples: int
    redirected_slots: int


MemorySection = Union[MemoryOn, MemoryOff]


class GpuDevice(TypedDict):
    index: int
    name: str
    memory_total_bytes: int
    samples: int
    utilisation_pct: float
    idle_share: float
    peak_memory_used_bytes: int
    peak_memory_t_s: float
    utilisation_timeline: list[GpuPoint]
    memory_timeline: list[GpuPoint]


class KernelLine(TypedDict):
    """A kernel's launching line; file and line null for launches with no user line."""

    file: Optional[str]
    line: Optional[int]
    calls: int
    gpu_s: float


class Kernel(TypedDict):
    name: str
    raw_name: str
    calls: int
    gpu_s: float
    lines: list[KernelLine]
    other_lines_calls: int
    other_lines_gpu_s: float


class GpuOff(TypedDict):
    enabled: Literal[False]


class GpuOn(TypedDict):
    """``gpu`` of a run that profiled GPUs."""

    enabled: Literal[True]
    kernel_tracing: bool
    devices: list[GpuDevice]
    gpu_s: float
    unattributed_gpu_s: float
    launches: int
    copy_h2d_bytes: int
    copy_d2h_bytes: int
    alloc_peak_bytes: int
    alloc_peak_at: Optional[Place]
    records: int
    dropped_records: int
    kernels: list[Kernel]


GpuSection = Union[GpuOn, GpuOff]


class _AsyncioRequired(TypedDict):
    loop_wait_s: float
    await_s: float
    other_loop_wait_s: float


class Asyncio(_AsyncioRequired, total=False):
    woken_s: float


class _AttachedRequired(TypedDict):
    pid: int
    started_at_epoch: float
    ended_by: str


class Attached(_AttachedRequired, total=False):
    """``attached``: method is absent from older files; attach_s and detach_s are added by
    the attaching process (detach_s not when the program exited while attached)."""

    method: str
    attach_s: float
    detach_s: float


class SummaryItem(TypedDict):
    rule: str
    text: str
    file: Optional[str]
    line: Optional[int]


class HeldLine(TypedDict):
    """A line holding memory at the combined peak."""

    pid: int
    file: str
    line: int
    bytes: int


class CombinedPeak(TypedDict):
    t_s: float
    lines: list[HeldLine]


class RegionLine(TypedDict):
    """One of a region's ``top_lines``."""

    file: str
    line: int
    time_s: float


class LabelMemory(TypedDict, total=False):
    """A region's or module's memory (absent from files written before it was recorded)."""

    alloc_bytes: int
    peak_bytes: int


class Region(LabelMemory):
    """An entry of ``regions``: heatline.region, record_function and NVTX ranges."""

    name: str
    path: str
    count: int
    wall_s: float
    python_s: float
    native_s: float
    system_s: float
    cpu_wait_s: float
    top_lines: list[RegionLine]
    slices: list[list[float]]
    slices_dropped: int


class TaskLine(TypedDict):
    """One of a task's ``lines``."""

    file: str
    line: int
    time_s: float


class Task(TypedDict):
    """An entry of ``tasks``: a distributed engine's task (a Ray remote function or actor
    method) by name."""

    name: str
    count: int
    wall_s: float
    python_s: float
    native_s: float
    system_s: float
    alloc_bytes: int
    lines: list[TaskLine]


# An entry of ``modules``: a torch nn.Module instance, by its path in its root module ("class"
# is a keyword, hence the functional form).
_ModuleRequired = TypedDict("_ModuleRequired", {
    "path": str, "class": str, "root": str, "count": int, "wall_s": float, "self_s": float,
    "python_s": float, "native_s": float, "system_s": float, "cpu_wait_s": float,
})


class Module(_ModuleRequired, LabelMemory):
    """An entry of ``modules``."""


class _ProcessRequired(TypedDict):
    pid: int
    ppid: int
    role: str
    argv: list[str]
    exit: str
    start_s: float
    elapsed_s: float
    cpu_s: float
    python_s: float
    native_s: float
    system_s: float
    idle_s: float
    peak_bytes: int


class ProcessRecord(_ProcessRequired, total=False):
    """An entry of ``processes``."""

    cpu_wait_s: float
    host: str
    address: str


class Steps(TypedDict):
    """``steps``: the program's step boundaries (heatline.step() or Optimizer.step())."""

    source: Optional[Literal["heatline.step", "optimizer"]]
    count: int
    started_s: list[float]
    durations_s: list[float]
    median_s: float
    mean_s: float
    min_s: float
    max_s: float
    window: Optional[tuple[int, int]]


class _ProfileRequired(TypedDict):
    schema_version: int
    heatline_version: str
    program: str
    argv: list[str]
    python_version: str
    platform: str
    started_at: str
    elapsed_s: float
    cpu_s: float
    sampling_interval_s: float
    samples: int
    sampled_s: float
    lost_s: float
    totals: Totals
    threads: list[ThreadRecord]
    files: dict[str, FileRecord]
    stacks: Stacks
    peak_bytes: int
    peak_at: Optional[PeakPlace]
    memory_timeline: list[MemoryPoint]
    memory: MemorySection
    gpu: GpuSection
    warnings: list[str]


class Profile(_ProfileRequired, total=False):
    """A profile file's top level."""

    max_sample_gap_s: float
    max_tick_s: float
    long_gaps: int
    long_gap_s: float
    steal_s: float
    cpu_count: int
    idle_s: float
    asyncio: Asyncio
    profiled_periods: list[Period]
    paused: bool
    steps: Steps
    attached: Attached
    summary: list[SummaryItem]
    regions: list[Region]
    modules: list[Module]
    # Where and when the process ran (absent from older files).
    host: str
    pid: int
    started_at_epoch: float
    tasks: list[Task]
    # Merged profiles (child processes).
    combined_peak: CombinedPeak
    main_peak_bytes: int
    main_peak_at: Optional[PeakPlace]
    processes: list[ProcessRecord]
    process_profiles: dict[str, "Profile"]


# --- Validation --------------------------------------------------------------------------

# Errors reported at most, so that a profile wrong in every line gives a readable list.
MAX_ERRORS = 50


def mismatches(profile: Any, type_: Any = Profile) -> list[str]:
    """What in ``profile`` does not match the model (``type_``, the whole profile by default):
    one line per problem, ``where: what`` (``files['/a.py'].lines[3].source: should be a
    string``); empty when it matches exactly. Unknown keys are problems too. Stricter than
    data.io.validate, which checks only what the readers use and allows more keys."""
    errors: list[str] = []
    _check(profile, type_, "profile", errors)
    return errors[:MAX_ERRORS]


def keys_of(typed_dict: Any) -> tuple[frozenset, frozenset]:
    """A TypedDict's (required, optional) keys."""
    return frozenset(typed_dict.__required_keys__), frozenset(typed_dict.__optional_keys__)


_HINTS: dict = {}


def _hints(typed_dict: Any) -> dict:
    if typed_dict not in _HINTS:
        _HINTS[typed_dict] = typing.get_type_hints(typed_dict)
    return _HINTS[typed_dict]


def _is_typed_dict(type_: Any) -> bool:
    return isinstance(type_, type) and issubclass(type_, dict) and hasattr(type_, "__total__")


def _describe(type_: Any) -> str:
    if _is_typed_dict(type_):
        return f"a {type_.__name__} object"
    origin = typing.get_origin(type_)
    if origin is list:
        return "a list"
    if origin is tuple:
        return f"a list of {len(typing.get_args(type_))}"
    if origin is dict:
        return "an object"
    if origin is Literal:
        return " or ".join(repr(arg) for arg in typing.get_args(type_))
    return {str: "a string", int: "an integer", float: "a number", bool: "true or false",
            type(None): "null"}.get(type_, repr(type_))


def _check(value: Any, type_: Any, where: str, errors: list[str]) -> None:
    if len(errors) >= MAX_ERRORS:
        return
    if isinstance(type_, typing.ForwardRef):
        type_ = type_.__forward_arg__
    if isinstance(type_, str):
        # A name in quotes inside a builtin generic (dict[str, "Profile"]): before 3.11,
        # get_type_hints leaves it unresolved there. It names a type of this module.
        type_ = globals()[type_]
    origin = typing.get_origin(type_)
    if origin is Union:
        options = typing.get_args(type_)
        if value is None and type(None) in options:
            return
        attempts = []
        for option in options:
            if option is type(None):
                continue
            found: list[str] = []
            _check(value, option, where, found)
            if not found:
                return
            attempts.append(found)
        # The alternative it came closest to says what is wrong.
        closest = min(attempts, key=len)
        if len(attempts) > 1 and all(len(a) == 1 and a[0].startswith(f"{where}:")
                                     for a in attempts):
            wanted = " or ".join(_describe(o) for o in options)
            errors.append(f"{where}: should be {wanted}")
        else:
            errors.extend(closest)
        return
    if _is_typed_dict(type_):
        if not isinstance(value, dict):
            errors.append(f"{where}: should be {_describe(type_)}")
            return
        hints = _hints(type_)
        required, _ = keys_of(type_)
        missing = sorted(required - value.keys())
        if missing:
            errors.append(f"{where}: missing {', '.join(missing)}")
        unknown = sorted(str(key) for key in value.keys() - hints.keys())
        if unknown:
            errors.append(f"{where}: unknown {', '.join(unknown)}")
        for key, item in value.items():
            if key in hints:
                _check(item, hints[key], f"{where}.{key}", errors)
        return
    if origin is list:
        if not isinstance(value, list):
            errors.append(f"{where}: should be a list")
            return
        (item_type,) = typing.get_args(type_)
        for index, item in enumerate(value):
            _check(item, item_type, f"{where}[{index}]", errors)
        return
    if origin is tuple:
        items = typing.get_args(type_)
        if not isinstance(value, (list, tuple)) or len(value) != len(items):
            errors.append(f"{where}: should be {_describe(type_)}")
            return
        for index, (item, item_type) in enumerate(zip(value, items)):
            _check(item, item_type, f"{where}[{index}]", errors)
        return
    if origin is dict:
        if not isinstance(value, dict):
            errors.append(f"{where}: should be an object")
            return
        key_type, item_type = typing.get_args(type_)
        for key, item in value.items():
            if not isinstance(key, key_type):
                errors.append(f"{where}: key {key!r} should be {_describe(key_type)}")
            _check(item, item_type, f"{where}[{key!r}]", errors)
        return
    if origin is Literal:
        if not any(type(value) is type(arg) and value == arg for arg in typing.get_args(type_)):
            errors.append(f"{where}: should be {_describe(type_)}, not {value!r}")
        return
    if type_ is float:
        ok = (isinstance(value, (int, float)) and not isinstance(value, bool)
              and (isinstance(value, int) or math.isfinite(value)))
    elif type_ is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif type_ is type(None):
        ok = value is None
    else:
        ok = isinstance(value, type_)
    if not ok:
        errors.append(f"{where}: should be {_describe(type_)}, not {type(value).__name__}")
