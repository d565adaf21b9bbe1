"""The runners: plain Python, heatline and its peers, each in the mode that is closest to a
user's ordinary use of it, and how to read each one's output for the accuracy comparison.

Every runner writes its output into an empty directory `out` (the run's working directory),
so the output size is the size of whatever the tool left there.

Mapping outputs to functions (accuracy): each parser returns {function name: {"total_s",
and where the tool splits time, "python_s", "native_s", "system_s"}} for the functions defined
in the target file. Units do not matter (samples, seconds, percentages): only shares are
compared.

- heatline: the profile's per-function times (python_s + native_s + system_s), all threads.
- Scalene (JSON): per-function n_cpu_percent_python + n_cpu_percent_c + n_sys_percent; the
  three are its Python / native / system split.
- py-spy (raw collapsed stacks, --idle so blocked threads are sampled too): every sample of
  every thread is charged to the innermost frame on its stack that is a function of the target
  file; a function's total is its sample count (inclusive of what it calls).
- pyinstrument (JSON call tree): the inclusive time of the outermost tree node of each target
  function, summed over the nodes where it appears. pyinstrument profiles only the thread that
  started it.
- cProfile (pstats): the cumulative time of each target function. Main thread only.
- yappi (pstats written by `python -m yappi -c wall`): the cumulative wall time, all threads.
- line_profiler (kernprof -l -p TARGET, which decorates every function of the target file
  without modifying it): the sum of the function's line times (inclusive), all threads.
"""

import importlib.metadata
import importlib.util
import json
import os
import pstats
import shutil
import subprocess
import sys


def _version(dist):
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


class Tool:
    """One runner. `command(ctx, script, targets, out)` returns the argv; `parse(out, target,
    names)` (optional) reads its output for the accuracy comparison."""

    def __init__(self, name, label, dist, mode, command, parse=None, split=False, module=None,
                 needs=None, memory_parse=None):
        self.name, self.label, self.dist, self.mode = name, label, dist, mode
        self.command, self.parse, self.split = command, parse, split
        self.memory_parse = memory_parse  # (out, target) -> {"lines": {n: bytes}, "peak_bytes"}
        self.module = module
        self.needs = needs  # extra availability check: ctx -> None or reason

    def probe(self, ctx):
        """(available, reason, version)"""
        version = _version(self.dist) if self.dist else None
        if self.module:
            try:
                found = importlib.util.find_spec(self.module) is not None
            except ModuleNotFoundError:  # its package is missing (profiling before 3.15)
                found = False
            if not found and self.dist is None:
                return False, (f"{self.module} is not in CPython "
                               f"{sys.version_info[0]}.{sys.version_info[1]}"), version
            if not found:
                return False, f"{self.dist} is not installed", version
        if self.needs:
            reason = self.needs(ctx)
            if reason:
                return False, reason, version
        return True, "", version


# ---------------------------------------------------------------- context


class Context:
    """What the commands need: the interpreter, the py-spy binary, heatline's flags."""

    def __init__(self, python=sys.executable):
        self.python = python
        bindir = os.path.dirname(python)
        candidate = os.path.join(bindir, "py-spy")
        self.py_spy = candidate if os.path.exists(candidate) else shutil.which("py-spy")
        self._heatline_help = None
        self._py_spy_probe = None
        self.workdir = None
        self.quiet_wait_s = 20.0  # before each run, wait at most this long for a quiet machine
        self.heatline_flags = []  # added to every heatline run (run.py --heatline-interval)

    def heatline_help(self):
        if self._heatline_help is None:
            try:
                result = subprocess.run([self.python, "-m", "heatline", "--help"],
                                        capture_output=True, text=True, timeout=60)
                self._heatline_help = result.stdout + result.stderr
            except (OSError, subprocess.TimeoutExpired) as e:
                self._heatline_help = f"error: {e}"
        return self._heatline_help

    def heatline_has_cpu_only(self):
        return "--cpu-only" in self.heatline_help()

    def py_spy_problem(self, workdir):
        """None when `py-spy record -- python prog` works here, else why not."""
        if self._py_spy_probe is None:
            if not self.py_spy:
                self._py_spy_probe = "py-spy is not installed"
            else:
                out = os.path.join(workdir, "py-spy-probe.txt")
                try:
                    result = subprocess.run(
                        [self.py_spy, "record", "-f", "raw", "-o", out, "--",
                         self.python, "-c", "import time\nfor _ in range(30): sum(range(100000))"],
                        capture_output=True, text=True, timeout=120)
                    if result.returncode != 0 or not os.path.exists(out):
                        self._py_spy_probe = ("py-spy record failed (ptrace of its child not "
                                              "permitted?): " + result.stderr.strip()[-500:])
                    else:
                        self._py_spy_probe = ""
                except (OSError, subprocess.TimeoutExpired) as e:
                    self._py_spy_probe = f"py-spy record failed: {e}"
        return self._py_spy_probe or None


# ---------------------------------------------------------------- parsers


def _base(path):
    return os.path.basename(path or "")


def parse_heatline(out, target, names):
    with open(os.path.join(out, "profile.json")) as f:
        profile = json.load(f)
    found = {}
    for path, entry in profile["files"].items():
        if _base(path) != target:
            continue
        for fn in entry["functions"]:
            name = fn["qualname"]
            if name in names:
                row = found.setdefault(name, {"python_s": 0.0, "native_s": 0.0, "system_s": 0.0})
                for k in ("python_s", "native_s", "system_s"):
                    row[k] += fn[k]
    for row in found.values():
        row["total_s"] = row["python_s"] + row["native_s"] + row["system_s"]
    return found


def parse_scalene(out, target, names):
    with open(os.path.join(out, "profile.json")) as f:
        profile = json.load(f)
    found = {}
    for path, entry in profile.get("files", {}).items():
        if _base(path) != target:
            continue
        for fn in entry.get("functions", []):
            name = fn.get("line", "").strip()
            if name in names:
                row = found.setdefault(name, {"python_s": 0.0, "native_s": 0.0, "system_s": 0.0})
                row["python_s"] += fn.get("n_cpu_percent_python", 0.0)
                row["native_s"] += fn.get("n_cpu_percent_c", 0.0)
                row["system_s"] += fn.get("n_sys_percent", 0.0)
    for row in found.values():
        row["total_s"] = row["python_s"] + row["native_s"] + row["system_s"]
    return found


def _frame(text):
    # "name (path:line)"
    name, _, rest = text.rpartition(" (")
    path = rest.rstrip(")").rpartition(":")[0]
    return name, path


def parse_py_spy(out, target, names):
    found = {}
    with open(os.path.join(out, "profile.txt")) as f:
        for line in f:
            line = line.rstrip("\n")
            stack, _, count = line.rpartition(" ")
            if not stack or not count.isdigit():
                continue
            for frame in reversed(stack.split(";")):
                name, path = _frame(frame)
                if name in names and _base(path) == target:
                    row = found.setdefault(name, {"total_s": 0.0})
                    row["total_s"] += int(count)
                    break
    return found


def parse_pyinstrument(out, target, names):
    with open(os.path.join(out, "profile.json")) as f:
        session = json.load(f)
    found = {}

    def visit(node):
        name = node.get("function")
        if name in names and _base(node.get("file_path")) == target:
            row = found.setdefault(name, {"total_s": 0.0})
            row["total_s"] += node.get("time", 0.0)
            return
        for child in node.get("children", []):
            visit(child)

    visit(session["root_frame"])
    return found


def parse_pstats(filename):
    def parse(out, target, names):
        stats = pstats.Stats(os.path.join(out, filename)).stats
        found = {}
        for (path, _line, name), (_cc, _nc, _tt, ct, _callers) in stats.items():
            if name in names and _base(path) == target:
                row = found.setdefault(name, {"total_s": 0.0})
                row["total_s"] += ct
        return found

    return parse


def parse_line_profiler(out, target, names):
    import line_profiler

    stats = line_profiler.load_stats(os.path.join(out, "profile.lprof"))
    found = {}
    for (path, _line, name), timings in stats.timings.items():
        if name in names and _base(path) == target:
            row = found.setdefault(name, {"total_s": 0.0})
            row["total_s"] += sum(t for _, _, t in timings) * stats.unit
    return found


# ---------------------------------------------------------------- memory parsers
#
# Each returns {"lines": {line number: bytes allocated there, summed over its runs},
# "peak_bytes": the program's peak as the tool reports it} for the target file.
# - heatline: each line's alloc_python_bytes + alloc_native_bytes; peak_bytes.
# - Scalene: each line's n_malloc_mb (MiB); max_footprint_mb.
# - memray: every allocation record (malloc family, mmap, and pymalloc calls when traced) is
#   charged to the innermost frame of its Python stack that is in the target file; the
#   capture's peak_memory. By default memray does not see pymalloc's small-object allocations
#   one by one, only the arenas pymalloc takes from the system (a line that makes many small
#   objects is charged only for the arenas it happened to open), hence also the runner
#   memray-py with --trace-python-allocators.

MIB = 1024 * 1024


def memory_heatline(out, target):
    with open(os.path.join(out, "profile.json")) as f:
        profile = json.load(f)
    lines = {}
    for path, entry in profile["files"].items():
        if _base(path) == target:
            for line in entry["lines"]:
                total = line.get("alloc_python_bytes", 0) + line.get("alloc_native_bytes", 0)
                if total:
                    lines[line["line"]] = lines.get(line["line"], 0) + total
    return {"lines": lines, "peak_bytes": profile.get("peak_bytes")}


def memory_scalene(out, target):
    with open(os.path.join(out, "profile.json")) as f:
        profile = json.load(f)
    lines = {}
    for path, entry in profile.get("files", {}).items():
        if _base(path) == target:
            for line in entry.get("lines", []):
                if line.get("n_malloc_mb"):
                    lines[line["lineno"]] = lines.get(line["lineno"], 0) + line["n_malloc_mb"] * MIB
    peak = profile.get("max_footprint_mb")
    return {"lines": lines, "peak_bytes": peak * MIB if peak is not None else None}


def memory_memray(out, target):
    import memray

    freeing = {memray.AllocatorType.FREE, memray.AllocatorType.MUNMAP,
               memray.AllocatorType.PYMALLOC_FREE}
    reader = memray.FileReader(os.path.join(out, "profile.bin"))
    lines = {}
    for record in reader.get_allocation_records():
        if record.allocator in freeing:
            continue
        for _function, path, line in record.stack_trace():
            if _base(path) == target:
                lines[line] = lines.get(line, 0) + record.size
                break
    return {"lines": lines, "peak_bytes": reader.metadata.peak_memory}


# ---------------------------------------------------------------- the runners


def _heatline(extra):
    return lambda ctx, script, targets, out: [
        ctx.python, "-m", "heatline", *extra, *ctx.heatline_flags, "-q",
        "-o", os.path.join(out, "profile.json"), script]


def _py_spy(extra):
    return lambda ctx, script, targets, out: [
        ctx.py_spy, "record", "-f", "raw", "--idle", *extra, "-o", os.path.join(out, "profile.txt"),
        "--", ctx.python, script]


def _scalene(extra):
    return lambda ctx, script, targets, out: [
        ctx.python, "-m", "scalene", "run", *extra, "-o", os.path.join(out, "profile.json"), script]


def _sampling(extra):
    return lambda ctx, script, targets, out: [
        ctx.python, "-m", "profiling.sampling", "run", "-a", *extra, "--pstats", "--no-summary",
        "-o", os.path.join(out, "profile.pstats"), script]


def _needs_cpu_only(ctx):
    if not ctx.heatline_has_cpu_only():
        return ("this heatline has no --cpu-only flag (no memory profiling yet), so its default "
                "run is CPU-only: see the heatline column")
    return None


def _line_profiler(ctx, script, targets, out):
    if not targets:
        return None
    return [ctx.python, "-m", "kernprof", "-l", "-q", "-p", ",".join(targets),
            "-o", os.path.join(out, "profile.lprof"), script]


TOOLS = [
    Tool("python", "python", None, "plain `python script.py`",
         lambda ctx, script, targets, out: [ctx.python, script]),
    Tool("heatline-cpu", "heatline CPU", "heatline", "`heatline --cpu-only -q -o FILE`",
         _heatline(["--cpu-only"]), parse_heatline, split=True, needs=_needs_cpu_only),
    Tool("heatline", "heatline", "heatline", "`heatline -q -o FILE` (full profile)",
         _heatline([]), parse_heatline, split=True, memory_parse=memory_heatline),
    Tool("heatline-nonative", "heatline --no-native", "heatline",
         "`heatline --no-native -q -o FILE` (full profile without native frames)",
         _heatline(["--no-native"]), parse_heatline, split=True, memory_parse=memory_heatline),
    Tool("scalene-cpu", "Scalene CPU", "scalene", "`scalene run --cpu-only -o FILE`",
         _scalene(["--cpu-only"]), parse_scalene, split=True, module="scalene"),
    Tool("scalene", "Scalene", "scalene", "`scalene run -o FILE` (CPU + memory, its default)",
         _scalene([]), parse_scalene, split=True, module="scalene", memory_parse=memory_scalene),
    Tool("py-spy", "py-spy", "py-spy", "`py-spy record -f raw --idle -o FILE -- python` (100 Hz)",
         _py_spy([]), parse_py_spy, needs=lambda ctx: ctx.py_spy_problem(ctx.workdir)),
    # Only in the multi-process part (heatbench/children.py):
    Tool("heatline-nochildren", "heatline --no-children", "heatline",
         "`heatline --no-children -q -o FILE` (full profile, parent process only)",
         _heatline(["--no-children"]), parse_heatline, split=True),
    Tool("py-spy-sub", "py-spy --subprocesses", "py-spy",
         "`py-spy record -f raw --idle --subprocesses -o FILE -- python` (100 Hz)",
         _py_spy(["--subprocesses"]), parse_py_spy, needs=lambda ctx: ctx.py_spy_problem(ctx.workdir)),
    Tool("memray", "memray", "memray", "`memray run -q -o FILE` (allocations; no CPU data)",
         lambda ctx, script, targets, out: [
             ctx.python, "-m", "memray", "run", "-q", "-o", os.path.join(out, "profile.bin"), script],
         None, module="memray", memory_parse=memory_memray),
    Tool("memray-py", "memray +py", "memray",
         "`memray run -q --trace-python-allocators -o FILE` (also every pymalloc allocation)",
         lambda ctx, script, targets, out: [
             ctx.python, "-m", "memray", "run", "-q", "--trace-python-allocators",
             "-o", os.path.join(out, "profile.bin"), script],
         None, module="memray", memory_parse=memory_memray),
    Tool("pyinstrument", "pyinstrument", "pyinstrument", "`pyinstrument -r json -o FILE` (1 ms)",
         lambda ctx, script, targets, out: [
             ctx.python, "-m", "pyinstrument", "-r", "json", "-o", os.path.join(out, "profile.json"),
             script],
         parse_pyinstrument, module="pyinstrument"),
    # CPython 3.15's own sampling profiler (PEP 799): at its default rate, and at heatline's
    # (100 Hz) for overhead at the same rate. Every thread (-a), wall time (its default mode).
    Tool("profiling.sampling", "profiling.sampling", None,
         "`python -m profiling.sampling run -a --pstats -o FILE` (1 kHz, 3.15+)",
         _sampling([]), parse_pstats("profile.pstats"), module="profiling.sampling"),
    Tool("profiling.sampling-100", "profiling.sampling 100 Hz", None,
         "`python -m profiling.sampling run -a -r 100 --pstats -o FILE` (3.15+)",
         _sampling(["-r", "100"]), parse_pstats("profile.pstats"), module="profiling.sampling"),
    Tool("cProfile", "cProfile", None, "`python -m cProfile -o FILE`",
         lambda ctx, script, targets, out: [
             ctx.python, "-m", "cProfile", "-o", os.path.join(out, "profile.prof"), script],
         parse_pstats("profile.prof")),
    Tool("yappi", "yappi", "yappi", "`python -m yappi -c wall -o FILE` (all threads)",
         lambda ctx, script, targets, out: [
             ctx.python, "-m", "yappi", "-c", "wall", "-o", os.path.join(out, "profile.pstat"),
             script],
         parse_pstats("profile.pstat"), module="yappi"),
    Tool("line_profiler", "line_profiler", "line_profiler",
         "`kernprof -l -p MODULE -o FILE` (every function of the benchmark's module, unmodified)",
         _line_profiler, parse_line_profiler, module="line_profiler"),
]

BY_NAME = {tool.name: tool for tool in TOOLS}

OTHER = "@other"  # suffix of a heatline runner's copy that imports heatline from another tree


def base_name(name):
    """The runner a name stands for: `heatline@other` runs as `heatline` does."""
    return name[:-len(OTHER)] if name.endswith(OTHER) else name


def other_tree(tool, directory, env):
    """A copy of the heatline runner `tool` that imports heatline from `directory` (a
    checkout's src/ with its _native built in place) first: run.py --other, for before/after
    comparisons in the same rounds. Its command is the runner's, under `env PYTHONPATH=...`."""
    path = os.pathsep.join(filter(None, [os.path.abspath(directory), env.get("PYTHONPATH")]))

    def command(ctx, script, targets, out):
        return ["env", f"PYTHONPATH={path}", *tool.command(ctx, script, targets, out)]

    def needs(ctx):
        code = ("import heatline, os, sys; print(os.path.realpath(heatline.__file__)); "
                "print(heatline.__version__)")
        try:
            found = subprocess.run(["env", f"PYTHONPATH={path}", ctx.python, "-c", code],
                                   capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as e:
            return f"cannot import heatline from {directory}: {e}"
        where = (found.stdout.splitlines() or [""])[0]
        if found.returncode != 0 or not where.startswith(os.path.realpath(directory) + os.sep):
            return (f"heatline is not importable from {directory}: "
                    + (found.stderr.strip()[-300:] or f"imported {where or 'nothing'}"))
        if "--cpu-only" in tool.command(ctx, "x.py", [], ".") and "--cpu-only" not in \
                subprocess.run(["env", f"PYTHONPATH={path}", ctx.python, "-m", "heatline",
                                "--help"], capture_output=True, text=True, timeout=60).stdout:
            return f"the heatline in {directory} has no --cpu-only flag"
        return None

    copy = Tool(tool.name + OTHER, tool.label + OTHER, None, tool.mode + f", heatline from {directory}",
                command, tool.parse, split=tool.split, needs=needs, memory_parse=tool.memory_parse)
    copy.pythonpath = path
    return copy
