"""Ground truth for the memory targets (tests/targets/memory*.py).

A memory target marks every line whose memory it knows with a trailing comment

    big = np.ones(n)  # mem: TAG (KIND)

and, right after that line, tells the truth what the line just did, by construction:

    TRUTH.line("TAG", python=..., native=..., copy=...)

`python` is what the line allocated through CPython's object and memory allocators (Python
objects, list item arrays), `native` what C code allocated with the malloc family (numpy data
buffers), `copy` the bytes it moved with memcpy/memmove. The targets' docstrings say why each
number is exact. KIND says what happens to the memory afterwards:

  transient   freed before the same line runs again (by the end of its phase);
  spike       a transient that makes the program's peak;
  kept_once   allocated once near the start, alive until the end of the run;
  leak        allocated again every round of the run and never freed: it keeps growing.

The functions whose lines are measured are decorated with @TRUTH.phase (the decorator returns
the function itself: it adds no frame).

Modes, chosen by $HEATLINE_TRUTH_MODE:

  (unset)       construction and timing only. This is the mode the target runs in under
                heatline: nothing here hooks the allocators or traces.
  tracemalloc   tracemalloc is started when this module is imported (the targets import it
                before anything else, numpy included; numpy reports its data buffers to
                tracemalloc with PyTraceMalloc_Track), so the exact peak of traced memory is
                known. With trace_lines (the default), a line tracer on the phase functions
                also measures, for each tagged line, the traced bytes it added (`net_bytes`,
                summed over its runs) and the most it added while it ran
                (`peak_growth_bytes`); the global peak is followed across the tracer's
                reset_peak() calls, so it stays exact. Sequential targets only: a concurrent
                thread's allocations would land in whatever line is open.
  copyprobe     run under LD_PRELOAD of _copyprobe.c (built by the tests): the same line tracer
                reads the probe's count of bytes passed to memcpy/memmove (and their _chk and
                mempcpy variants) by every library, and gives each tagged line `copy_bytes`.

$HEATLINE_TARGET_SCALE scales the targets' sizes (e.g. 0.5 under ASan).

At exit the truth is written as JSON to $HEATLINE_TRUTH (when set):

  {
   "target": absolute path of the target,
   "mode": "" | "tracemalloc" | "copyprobe",
   "scale": float,
   "started_unix_s": time.time() when this module was imported (all "_s" times below are
                     seconds since then, time.perf_counter based),
   "elapsed_s": seconds from then to the exit handler,
   "lines": {"<line number>": {
       "tag", "kind", "function" (qualname of the enclosing function), "calls",
       "alloc_python_bytes", "alloc_native_bytes", "copy_bytes"      (sums over its runs),
       "freed_bytes", "growth_bytes" (still alive at exit: all of it for kept_once and leak,
                                      none for transient and spike; freed = alloc - growth),
       "peak_bytes"      (the line's most live bytes at once: the largest run for transient
                          and spike lines unless the target says more with line_peak(),
                          the total for kept_once and leak lines),
       "first_s", "last_s"   (when its first and last run ended),
       "steps"               (leak lines: [when each run ended, bytes it held by then]: its
                              true growth over time),
       "started_s"           (when its first run started, where the target says so),
       "slack_bytes"         (what the construction knowingly leaves out, see line()),
       "measured": {"net_bytes", "peak_growth_bytes"}  (tracemalloc mode)
                   {"copy_bytes"}                      (copyprobe mode)
   }},
   "functions": {qualname: the sums of its tagged lines' alloc/copy/growth fields},
   "leaks": [line numbers of the planted leaks],
   "not_leaks": [line numbers of transient, spike and kept_once lines],
   "leak_rates": {"<line>": bytes leaked per second between its first and last run},
   "spike": {"line", "started_s", "ended_s"} or null,
   "peak": null, or in tracemalloc mode {"bytes": exact peak of traced memory,
            "line": the line of a phase function during which it was reached (null when no
                    line tracer ran, or the peak was reached outside the phase functions),
            "t_s": when the tracer saw it},
   "peak_construction_bytes": the largest live memory the target knows of by construction
            (see note_peak): the exact peak minus what untagged code keeps alive (imports)
  }
"""

import ast
import atexit
import json
import os
import re
import sys
import threading
import time

MODE = os.environ.get("HEATLINE_TRUTH_MODE", "")
if MODE not in ("", "tracemalloc", "copyprobe"):
    raise SystemExit(f"unknown HEATLINE_TRUTH_MODE {MODE!r}")
if MODE == "tracemalloc":
    import tracemalloc

    tracemalloc.start(1)

_T0 = time.perf_counter()
_STARTED_UNIX = time.time()
KINDS = ("transient", "spike", "kept_once", "leak")
PEAK_SLACK = 64 * 1024
_TAG = re.compile(r"#\s*mem:\s*(\w+)\s*\((\w+)\)")


def _functions_by_line(source):
    """{line: qualname of the innermost function containing it}."""
    owners = {}

    def visit(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                qualname = prefix + child.name
                for line in range(child.lineno, child.end_lineno + 1):
                    owners[line] = qualname
                visit(child, qualname + ".<locals>.")
            elif isinstance(child, ast.ClassDef):
                visit(child, prefix + child.name + ".")
            else:
                visit(child, prefix)

    visit(ast.parse(source), "")
    return owners


class Truth:
    def __init__(self, target, trace_lines=True):
        self.target = os.path.abspath(target)
        self.scale = float(os.environ.get("HEATLINE_TARGET_SCALE", "1"))
        self._lock = threading.Lock()
        with open(self.target) as f:
            source = f.read()
        owners = _functions_by_line(source)
        self.tags = {}  # tag -> {"line", "kind", "function"}
        for number, text in enumerate(source.splitlines(), 1):
            match = _TAG.search(text)
            if match:
                tag, kind = match.groups()
                assert kind in KINDS, f"line {number}: unknown kind {kind!r}"
                assert tag not in self.tags, f"tag {tag!r} used twice"
                self.tags[tag] = {"line": number, "kind": kind, "function": owners.get(number)}
        self._lines = {}
        self._spike = None
        self._noted_peak = 0
        self._codes = set()
        self._open = {}  # id(frame) -> (line, reading)
        self._measured = {}  # line -> {...}
        self._peak = None
        self._tracing = trace_lines and MODE != ""
        if MODE == "copyprobe":
            import ctypes

            probe = ctypes.CDLL(None).hl_copyprobe_bytes  # AttributeError: not preloaded
            probe.restype = ctypes.c_uint64
            probe.argtypes = []
            self._probe = probe
        if self._tracing:
            sys.settrace(self._global_trace)
            threading.settrace(self._global_trace)
        atexit.register(self._write)

    # -- what the target calls -------------------------------------------------------------

    @staticmethod
    def now():
        return time.perf_counter() - _T0

    def phase(self, function):
        self._codes.add(function.__code__)
        return function

    def line(self, tag, *, python=0, native=0, copy=0, started=None, slack=0):
        """slack: bytes this run of the line may allocate beyond python + native, that the
        construction leaves out (the target's docstring says what); test_memory_truth.py
        allows it when comparing with tracemalloc."""
        ended = self.now()
        with self._lock:
            entry = self._lines.get(tag)
            if entry is None:
                entry = self._lines[tag] = {
                    "calls": 0, "alloc_python_bytes": 0, "alloc_native_bytes": 0,
                    "copy_bytes": 0, "largest_call_bytes": 0, "first_s": ended,
                    "last_s": ended, "started_s": started, "slack_bytes": 0,
                }
            entry["calls"] += 1
            entry["alloc_python_bytes"] += int(python)
            entry["alloc_native_bytes"] += int(native)
            entry["copy_bytes"] += int(copy)
            entry["slack_bytes"] += int(slack)
            entry["largest_call_bytes"] = max(entry["largest_call_bytes"], int(python + native))
            entry["last_s"] = ended
            if self.tags[tag]["kind"] == "leak":
                held = entry["alloc_python_bytes"] + entry["alloc_native_bytes"]
                entry.setdefault("steps", []).append([ended, held])
            if self.tags[tag]["kind"] == "spike":
                self._spike = {"line": self.tags[tag]["line"], "started_s": started,
                               "ended_s": ended}

    def line_peak(self, tag, peak_bytes):
        """The most the line has alive at once, where it is not its largest run (threads
        running the same line at the same time)."""
        with self._lock:
            entry = self._lines[tag]
            entry["largest_call_bytes"] = max(entry["largest_call_bytes"], int(peak_bytes))

    def note_peak(self, transient_bytes):
        """The target says: right now, its tagged transient memory alive is transient_bytes.
        With what its kept_once and leak lines made so far, that is the live memory the
        target knows of; the largest such value is `peak_construction_bytes` (the exact peak
        adds what the interpreter allocated outside tagged lines, e.g. importing numpy)."""
        with self._lock:
            live = transient_bytes
            for tag, done in self._lines.items():
                if self.tags[tag]["kind"] in ("kept_once", "leak"):
                    live += done["alloc_python_bytes"] + done["alloc_native_bytes"]
            self._noted_peak = max(self._noted_peak, int(live))

    # -- the line tracer (tracemalloc and copyprobe modes) -------------------------------

    def _global_trace(self, frame, event, arg):
        if event == "call" and frame.f_code in self._codes:
            return self._local_trace
        return None

    def _local_trace(self, frame, event, arg):
        if MODE == "tracemalloc":
            current, peak = tracemalloc.get_traced_memory()
            reading = current
        else:
            reading = self._probe()
        key = id(frame)
        opened = self._open.pop(key, None)
        if opened is not None:
            line, before = opened
            record = self._measured.setdefault(line, {})
            if MODE == "tracemalloc":
                record["net_bytes"] = record.get("net_bytes", 0) + current - before
                record["peak_growth_bytes"] = max(record.get("peak_growth_bytes", 0), peak - before)
            else:
                record["copy_bytes"] = record.get("copy_bytes", 0) + reading - before
        if MODE == "tracemalloc":
            self._follow_peak(peak, opened[0] if opened else None)
        if event == "line":
            self._open[key] = (frame.f_lineno, reading)
            if MODE == "tracemalloc":
                tracemalloc.reset_peak()
        return self._local_trace

    def _follow_peak(self, peak, line):
        """The exact peak, and the line during which it was reached. Small allocations made
        later while the peak's memory is still alive (the tracer's own included) raise the
        maximum by a few bytes: the line is the one of the last rise by more than PEAK_SLACK."""
        if self._peak is None or peak > self._peak["bytes"] + PEAK_SLACK:
            self._peak = {"bytes": peak, "line": line, "t_s": round(self.now(), 6)}
        elif peak > self._peak["bytes"]:
            self._peak["bytes"] = peak

    # -- the result ------------------------------------------------------------------------

    def result(self):
        lines, functions, rates = {}, {}, {}
        for tag, where in self.tags.items():
            done = self._lines.get(tag)
            if done is None:
                continue  # never ran (a scaled-down run may skip a line)
            total = done["alloc_python_bytes"] + done["alloc_native_bytes"]
            kept = where["kind"] in ("kept_once", "leak")
            entry = {
                "tag": tag, "kind": where["kind"], "function": where["function"],
                "calls": done["calls"],
                "alloc_python_bytes": done["alloc_python_bytes"],
                "alloc_native_bytes": done["alloc_native_bytes"],
                "copy_bytes": done["copy_bytes"],
                "growth_bytes": total if kept else 0,
                "freed_bytes": 0 if kept else total,
                "peak_bytes": total if kept else done["largest_call_bytes"],
                "first_s": round(done["first_s"], 6), "last_s": round(done["last_s"], 6),
                "started_s": None if done["started_s"] is None else round(done["started_s"], 6),
                "slack_bytes": done["slack_bytes"],
            }
            if "steps" in done:
                entry["steps"] = [[round(t, 6), held] for t, held in done["steps"]]
            measured = self._measured.get(where["line"])
            if measured is not None:
                entry["measured"] = measured
            lines[str(where["line"])] = entry
            function = functions.setdefault(
                where["function"],
                {"alloc_python_bytes": 0, "alloc_native_bytes": 0, "copy_bytes": 0,
                 "growth_bytes": 0, "freed_bytes": 0},
            )
            for key in function:
                function[key] += entry[key]
            if where["kind"] == "leak" and done["last_s"] > done["first_s"]:
                rates[str(where["line"])] = total / (done["last_s"] - done["first_s"])
        return {
            "target": self.target,
            "mode": MODE,
            "scale": self.scale,
            "started_unix_s": _STARTED_UNIX,
            "elapsed_s": round(self.now(), 6),
            "lines": lines,
            "functions": functions,
            "leaks": sorted(int(n) for n, e in lines.items() if e["kind"] == "leak"),
            "not_leaks": sorted(int(n) for n, e in lines.items() if e["kind"] != "leak"),
            "leak_rates": rates,
            "spike": self._spike,
            "peak": self._final_peak(),
            "peak_construction_bytes": self._noted_peak,
        }

    def _final_peak(self):
        if MODE != "tracemalloc":
            return None
        # The peak since the tracer's last reset_peak() (all of the run without a tracer).
        self._follow_peak(tracemalloc.get_traced_memory()[1], None)
        return self._peak

    def _write(self):
        if self._tracing:
            sys.settrace(None)
            threading.settrace(None)
        path = os.environ.get("HEATLINE_TRUTH")
        if path:
            with open(path, "w") as f:
                json.dump(self.result(), f, indent=1)
