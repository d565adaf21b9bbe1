"""The summary: a few plain sentences that name where a run's time went and what held it back,
each pointing at a file:line, computed from the profile dict alone (so `heatline view` of a
profile written before the summary existed gets one too).

Every sentence comes from one rule (docs/design-reports.md, "The summary": each rule's condition
and thresholds). A rule that is not sure stays silent: a wrong diagnosis sends the reader to
optimise the wrong thing, which is worse than saying nothing. The thresholds are the module's
constants below, and each rule's test program (tests/targets/summary_*.py) shows it firing on a
program built to show it and silent on one that is not.

An item is ``{"rule", "text", "file", "line"}``: the rule's name, the sentence, and the place
it points at first (``file`` and ``line`` null when it points nowhere in particular).
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from heatline import units
from heatline.options import DEFAULT_SAMPLING_INTERVAL_S
from heatline.data.memory import value_at
from heatline.data.queries import process_keys
from heatline.data.queries import stacks as _stacks

# typing only for type checkers: a run's path imports none (heatline/__init__.py).
TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: importing typing costs every run about 4 ms
    from typing import Any
    from heatline.data.model import Profile, SummaryItem

# At most this many sentences; more rules firing than this keep the most telling (RANK).
MAX_SENTENCES = 6
# A figure a rule relies on must rest on at least this many samples' worth of time: fewer
# is noise (each sample charges the time since the previous one to one state).
MIN_SAMPLES = 5

# What the main thread waits on: named when blocked for this share of its time (imports left out).
WAIT_SHARE = 0.20
# A waiting place is named when it holds this share of the main thread's waiting.
WAIT_PLACE_SHARE = 0.25
# DataLoader starvation: the training loop waits for batches this share of its time. Then the
# loop would run at least 1 / (1 - 0.3) = 1.4 times faster if batches were ready at once.
STARVED_SHARE = 0.30
# DataLoader workers busy this share of their time are the bottleneck themselves.
WORKERS_BUSY_SHARE = 0.60
# Worker threads are named (their names, busiest first) up to this many.
THREAD_NAMES = 3
# Worker threads: the main thread blocked this share of its time mostly waits ...
THREADS_MAIN_WAIT_SHARE = 0.50
# ... and the other threads of its process, with this share of the process's running time in
# user code, are where the work is done.
THREADS_WORK_SHARE = 0.50
# GIL contention: a line whose running time is at least this share Python does no blocking
# call of its own, so time a thread spends blocked there is time waiting for the GIL ...
GIL_PYTHON_SHARE = 0.90
# ... and it is contention when such waiting is this share of those lines' time (a lower bound:
# on a loaded machine a thread woken to take the GIL waits for a CPU as runnable, which counts
# as running; six contending threads showed 23-70% at load 11-12 on 2 cores, where an idle
# machine shows about 5/6) ...
GIL_WAIT_SHARE = 0.15
# ... and at least this share of the process's wall time (so that it matters).
GIL_WALL_SHARE = 0.10
# Pool imbalance: the busiest worker did this many times the mean of the others' work.
IMBALANCE_RATIO = 3.0
# Hottest lines: named when they take this share of all running (python + native) time; a
# line is "Python" or "native" when that kind is this share of its running time.
HOT_LINE_SHARE = 0.10
KIND_SHARE = 0.70
# Copy volume: a line copied at least this much, this many times the most memory it held at
# once (so it copies the same data again and again), and has this share of the running time.
# No rate per second: a line's running time includes time runnable but waiting for a CPU, so a
# rate would change with the machine's load.
COPY_MIN_BYTES = 64 << 20
COPY_REPEAT = 4
COPY_TIME_SHARE = 0.05
# Leaks worth a sentence: a line the leak rule flags (data/memory.py) holding this much.
LEAK_MIN_BYTES = 1 << 20
# The peak is worth a sentence from this size; a line held "part of it" from this share.
PEAK_MIN_BYTES = 16 << 20
PEAK_HOLDER_SHARE = 0.10
# Low GPU utilisation: the rule of thumb ML engineers use (below 30% the input pipeline or
# other CPU work starves the device), over at least this many NVML samples (100 ms apart).
GPU_LOW_PCT = 30.0
GPU_MIN_SAMPLES = 10

# Waiting for a CPU: named when the threads waited for one this share of the time they were
# ready to run (running + waiting); the program oversubscribes the machine when its threads
# wanted this many times its CPUs on average (CPU time + waits over wall time), else the
# waiting is other programs'. A thread counts as busy for this share of its process's time.
WAITING_SHARE = 0.20
OVERSUBSCRIBED_RATIO = 1.25
BUSY_THREAD_SHARE = 0.10

# Training steps (the profile's `steps`): a step is named when it took at least this many times
# the median step and at least STEP_MIN_EXTRA_S more than it, over at least STEP_MIN_COUNT
# steps. 3x: the spread of a steady loop's steps on a loaded machine (scheduler preemption,
# another program's burst, the collector) stays well under it, and a step three times the
# usual is what a reader asks about. The floor keeps quick loops quiet: a 2 ms step taking
# 7 ms is worth no sentence, and 50 ms is several of the kernel's scheduling slices (a few ms
# each), more than a slice lost to another program. Five steps at least, else the median is
# no "usual".
STEP_RATIO = 3.0
STEP_MIN_EXTRA_S = 0.05
STEP_MIN_COUNT = 5
# At most this many slow steps are named (the slowest), the rest counted.
STEP_NAMED = 3

# Stragglers among peer processes (torchrun's ranks, Dask or Ray workers: processes doing the
# same work side by side, so that the slowest holds the others back). Each peer's busy time is
# its running time (python + native) at the program's lines, imports left out (a cost every
# peer pays once), per step where every peer marked steps. The busiest peer is the straggler
# when it was busy STRAGGLER_RATIO times the others' median: over the spread of peers doing the
# same work (on-CPU time, so a loaded machine's waits for a CPU do not count; the ranks of one
# balanced loop, 30 to 38 samples each, differed by up to 1.25 times in this project's runs,
# within their counting noise), and when its excess over that median is STRAGGLER_SIGMAS
# standard deviations of the sampling's counting noise (a figure of n samples varies by about
# sqrt(n) samples from run to run) and MIN_SAMPLES samples at least.
STRAGGLER_RATIO = 1.5
STRAGGLER_SIGMAS = 3.0
# The others' wait is named when their blocked time at one line is this share of their time
# (of their steps' time when steps were marked, else of their wall time).
STRAGGLER_WAIT_SHARE = 0.20
# A distributed engine's task (the profile's `tasks`) that dominates: at least this share of
# all tasks' sampled time; the worker named with it ran at least TASK_WORKER_SHARE of its time.
TASK_SHARE = 0.5
TASK_WORKER_SHARE = 0.6
# Roles of peer workers besides torchrun's ranks ("rank N (node G, local rank L)").
PEER_ROLES = ("Dask worker", "Ray worker")

# Rules in the order their sentences are shown; when more than MAX_SENTENCES fire, those with
# the lowest RANK (diagnoses before descriptions) are kept.
ORDER = ("steps", "stragglers", "tasks", "processes", "oversubscription", "busy_machine",
         "dataloader_starvation", "gpu_utilisation", "main_wait", "worker_threads",
         "gil_contention", "pool_imbalance", "hot_lines", "copy_volume", "leaks", "memory_peak")
RANK = {"steps": 1, "stragglers": 0, "tasks": 2, "dataloader_starvation": 0, "gpu_utilisation": 0,
        "gil_contention": 0, "pool_imbalance": 0, "leaks": 1, "main_wait": 1,
        "worker_threads": 1, "hot_lines": 2, "copy_volume": 3, "processes": 3,
        "memory_peak": 4, "oversubscription": 0, "busy_machine": 2}
assert set(ORDER) == set(RANK)

_POOL_ROLES = ("Pool worker", "ProcessPoolExecutor worker")
_SOURCE_WIDTH = 60  # source quoted in a sentence, at most (then cut with an ellipsis)


def summarise(profile: Profile) -> list[SummaryItem]:
    """The summary of ``profile`` (docs/profile-format.md): at most MAX_SENTENCES items."""
    facts = _Facts(profile)
    found: dict[str, dict[str, Any]] = {}
    # The GPU rule names the cause the wait rules found, so it is worked out after them.
    for rule in sorted(ORDER, key=lambda rule: rule == "gpu_utilisation"):
        item = _RULES[rule](facts, found)
        if item is not None:
            found[rule] = {"rule": rule, **item}
    kept = sorted(found, key=lambda rule: RANK[rule])[:MAX_SENTENCES]
    return [found[rule] for rule in ORDER if rule in kept]


def with_summary(profile: Profile) -> Profile:
    """``profile`` with its ``summary`` (re)computed, in place; returns it."""
    profile["summary"] = summarise(profile)
    return profile


class _Facts:
    """What several rules read, worked out once: the stacks by thread, each thread's process,
    the main thread, and how to name places."""

    def __init__(self, profile: Profile) -> None:
        self.profile = profile
        self.files = profile.get("files") or {}
        self.frames = (profile.get("stacks") or {}).get("frames", [])
        self.threads = profile.get("threads", [])
        self.interval = profile.get("sampling_interval_s") or DEFAULT_SAMPLING_INTERVAL_S
        self.min_s = MIN_SAMPLES * self.interval
        self.processes = profile.get("processes") or []
        self.own = profile.get("process_profiles") or {}
        # each process's key in process_profiles, in the order of processes
        self.keys = process_keys(self.processes)
        main_pid = self.processes[0]["pid"] if self.processes else None
        # A child's threads carry its pid (data/merge.py); the main process's do not.
        self.thread_pid = [thread.get("pid", main_pid) for thread in self.threads]
        self.main_thread = next(
            (i for i, t in enumerate(self.threads) if t.get("main") and "pid" not in t), None)
        self.stacks = list(_stacks(profile))
        program = profile.get("program", "")
        self.base = os.path.dirname(program) if os.path.isabs(program) else ""
        self.lines = {(path, line["line"]): line
                      for path, entry in self.files.items() for line in entry.get("lines", [])}
        self.gpu = bool((profile.get("gpu") or {}).get("enabled"))
        self._main_waits: tuple[float, dict[tuple[str, int, str], float]] | None = None
        # (thread, file, line) -> [python, native, system] seconds with that user line the
        # innermost frame (no library frame below it): the line's own bytecode and the C
        # functions it calls directly.
        self.direct: dict[tuple[int, str, int], list[float]] = {}
        # (file, line) -> [seconds importing modules, all seconds] at that user line.
        self.imports: dict[tuple[str, int], list[float]] = {}
        for stack in self.stacks:
            position = self.user_frame(stack.frames)
            if position is not None:
                frame = self.frames[stack.frames[position]]
                into = self.imports.setdefault((frame["file"], frame["line"]), [0.0, 0.0])
                into[0] += stack.total_s if self.importing(stack.frames[position:]) else 0.0
                into[1] += stack.total_s
            if stack.frames and self._is_user(stack.frames[-1]):
                frame = self.frames[stack.frames[-1]]
                into = self.direct.setdefault((stack.thread, frame["file"], frame["line"]),
                                              [0.0, 0.0, 0.0])
                into[0] += stack.python_s
                into[1] += stack.native_s
                into[2] += stack.system_s

    def _is_user(self, index: int) -> bool:
        return self.frames[index].get("file") in self.files

    def user_frame(self, frames: list[int]) -> int | None:
        """The position in ``frames`` of the innermost user frame, None without one."""
        for position in range(len(frames) - 1, -1, -1):
            if self._is_user(frames[position]):
                return position
        return None

    def mostly_importing(self, path: str, line: int) -> bool:
        """Most of the line's time went to importing modules (a one-time cost, whose memory
        stays as the modules' own)."""
        importing, total = self.imports.get((path, line), (0.0, 0.0))
        return total > 0 and importing >= 0.5 * total

    def importing(self, frames: list[int]) -> bool:
        return any(self.frames[i].get("file", "").startswith("<frozen importlib")
                   for i in frames)

    def where(self, path: str, line: int) -> str:
        """``file:line``, the file relative to the program's directory when inside it."""
        if self.base and path.startswith(self.base + os.sep):
            path = path[len(self.base) + 1:]
        return f"{path}:{line}"

    def code(self, path: str, line: int) -> str:
        """`` `source` `` of a line (stripped, cut at _SOURCE_WIDTH), "" when unknown."""
        text = _without_comment((self.lines.get((path, line)) or {}).get("source", "")).strip()
        if not text:
            return ""
        if len(text) > _SOURCE_WIDTH:
            text = text[: _SOURCE_WIDTH - 1].rstrip() + "…"
        return f" `{text}`"

    def place(self, path: str, line: int) -> str:
        return self.where(path, line) + self.code(path, line)

    def is_python_line(self, threads: list[int], path: str, line: int) -> bool:
        """These threads ran this line's own code as Python (no call of its own that could
        block): GIL_PYTHON_SHARE of their running time there (with no library frame below) was
        Python, over at least three samples' worth. A line's kind is the line's, so it is judged
        over all the threads that ran it: one thread's few samples there would leave it to
        chance (six threads of 50 ms each on two lines have two or three samples a line)."""
        python = native = 0.0
        for thread in threads:
            own_python, own_native, _ = self.direct.get((thread, path, line), (0.0, 0.0, 0.0))
            python += own_python
            native += own_native
        return python >= 3 * self.interval and python >= GIL_PYTHON_SHARE * (python + native)

    def process_threads(self) -> dict[Any, list[int]]:
        found: dict[Any, list[int]] = {}
        for index, pid in enumerate(self.thread_pid):
            found.setdefault(pid, []).append(index)
        return found

    def process_elapsed(self, pid: Any) -> float:
        for process in self.processes:
            if process["pid"] == pid:
                return process["elapsed_s"]
        return self.profile.get("elapsed_s", 0.0)

    def busiest_line(self, profiles: Iterable[Profile]) -> tuple[str, int, float] | None:
        """(file, line, running seconds) of the line with the most running time over these
        processes' own profiles."""
        busy: dict[tuple[str, int], float] = {}
        for own in profiles:
            for path, entry in (own.get("files") or {}).items():
                for line in entry.get("lines", []):
                    seconds = line["python_s"] + line["native_s"]
                    if seconds > 0:
                        busy[(path, line["line"])] = busy.get((path, line["line"]), 0.0) + seconds
        if not busy:
            return None
        (path, line), seconds = max(busy.items(), key=lambda item: (item[1], item[0]))
        return path, line, seconds

    def main_waits(self) -> tuple[float, dict[tuple[str, int, str], float]]:
        """The main thread's time outside imports, and its blocked time by (file, line, what
        it waits for)."""
        if self._main_waits is None:
            self._main_waits = self._find_main_waits()
        return self._main_waits

    def _find_main_waits(self) -> tuple[float, dict[tuple[str, int, str], float]]:
        total = 0.0
        waits: dict[tuple[str, int, str], float] = {}
        if self.main_thread is None:
            return total, waits
        for stack in self.stacks:
            if stack.thread != self.main_thread or self.importing(stack.frames):
                continue
            total += stack.total_s
            if stack.system_s <= 0:
                continue
            position = self.user_frame(stack.frames)
            if position is None:
                continue
            frame = self.frames[stack.frames[position]]
            what = self.waits_for(stack.frames[position + 1:], frame["file"], frame["line"])
            key = (frame["file"], frame["line"], what)
            waits[key] = waits.get(key, 0.0) + stack.system_s
        return total, waits

    def roles(self) -> set[str]:
        return {process["role"] for process in self.processes}

    def waits_for(self, below: list[int], path: str, line: int) -> str:
        """What a thread blocked at this user line waits for, in the program's terms: from
        the library frames below it (what the line called), else from the line's source."""
        import re  # here, not at the top: only a run whose main thread waited needs it

        for index in below:
            frame = self.frames[index]
            file = frame.get("file", "").replace(os.sep, "/")
            qualname = frame.get("qualname") or frame.get("name") or ""
            for pattern, what in _LIBRARY_WAITS:
                if re.search(pattern, file):
                    return self._named(what, file, qualname)
        source = (self.lines.get((path, line)) or {}).get("source", "")
        for pattern, what in _SOURCE_WAITS:
            if re.search(pattern, source) and (what != "the GPU (a synchronisation)" or self.gpu):
                return what
        if self.main_thread is not None and self.is_python_line([self.main_thread], path, line):
            return "the GIL (another thread holds it)"
        if below:
            frame = self.frames[below[-1]]
            name = frame.get("qualname") or frame.get("name") or "?"
            return f"{name} ({os.path.basename(frame.get('file', ''))})"
        return "a call on this line"

    def _named(self, what: str, file: str, qualname: str) -> str:
        roles = self.roles()
        if what == "pool":
            return ("a process pool (multiprocessing.Pool)" if "Pool worker" in roles
                    else "a pool (multiprocessing.pool)")
        if what == "futures":
            if "ProcessPoolExecutor worker" in roles or file.endswith("futures/process.py"):
                return "a process pool (ProcessPoolExecutor)"
            return "futures (concurrent.futures)"
        if what == "threading":
            # Before 3.11 code objects have no qualname: the profile then says "join" for
            # Thread.join (docs/profile-format.md).
            if qualname.startswith("Thread.join") or qualname == "join":
                return "other threads (Thread.join)"
            if qualname.startswith("Thread.start") or qualname == "start":
                return "a new thread to start (Thread.start)"  # it must run to say so
            return f"another thread (threading.{qualname})"
        return what


# Library frames below a waiting line, checked from the line's own call inwards: the first
# match says what it waits for. Paths end so, wherever the library is installed.
_LIBRARY_WAITS = (
    (r"/torch/utils/data/dataloader\.py$", "DataLoader workers"),
    (r"/multiprocessing/pool\.py$", "pool"),
    (r"/concurrent/futures/\w+\.py$", "futures"),
    (r"/(subprocess|multiprocessing/popen_\w+|multiprocessing/process)\.py$",
     "child processes"),
    (r"/multiprocessing/(queues|connection|managers|synchronize)\.py$",
     "another process (a multiprocessing queue, pipe or lock)"),
    (r"/queue\.py$", "a queue (queue.Queue)"),
    (r"/threading\.py$", "threading"),
    (r"/asyncio/\w+\.py$", "the asyncio event loop (I/O or timers)"),
    (r"/(socket|ssl|selectors|http/client|urllib/request)\.py$|/(urllib3|requests|httpx)/",
     "network I/O"),
)
# Else the waiting line's own source (a C function called directly leaves no frame).
_SOURCE_WAITS = (
    # An await whose task waits on a thread (asyncio charges the wait to the await line, with
    # nothing below it: docs/design-engine.md, "asyncio: waits charged to awaits").
    (r"\.run_in_executor\(|\bto_thread\(", "a thread pool (awaited)"),
    (r"\bsleep\(", "a sleep"),
    (r"\.acquire\(|^\s*with\b.*lock\b", "a lock"),
    (r"\.item\(\)|\bsynchronize\(|\.cpu\(\)|\.tolist\(\)", "the GPU (a synchronisation)"),
    (r"\bwaitpid\(|\bwait\(\)", "child processes"),
    (r"\b(open|input)\(|\.(read|readline|readlines|write|flush|recv|recv_into|send|sendall"
     r"|accept|connect|fsync)\(|\bos\.(read|write)\(", "I/O"),
    (r"\bawait\b", "an awaited future (asyncio)"),
)


def _without_comment(source: str) -> str:
    """The line without a trailing ``# comment`` (a ``#`` outside quotes), which says nothing
    about where the time went."""
    quote = ""
    for position, char in enumerate(source):
        if quote:
            if char == quote and source[position - 1] != "\\":
                quote = ""
        elif char in "'\"":
            quote = char
        elif char == "#":
            return source[:position]
    return source


def _pct(share: float) -> str:
    return f"{share * 100:.0f}%"


def _seconds(value: float) -> str:
    return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.1f} s"


def _plural(count: int, role: str) -> str:
    """``2 DataLoader workers``, ``1 fork child``, ``3 multiprocessing processes (P)``."""
    if count == 1:
        return f"1 {role}"
    head, paren, tail = role.partition(" (")
    words = head.split(" ")
    last = words[-1]
    words[-1] = {"child": "children"}.get(last, last + ("es" if last.endswith("s") else "s"))
    return f"{count} {' '.join(words)}{paren}{tail}"


def _kind(role: str) -> str:
    """A process's kind: its role, "rank" for each of torchrun's ranks."""
    return "rank" if role.startswith("rank ") and role[5:].split(" ")[0].isdigit() else role


def _processes(facts: _Facts, found: dict[str, Any]) -> dict[str, Any] | None:
    """Where the time went, per process kind: each kind's share of the CPU time, and the line
    its processes spent most running time at. Needs child processes."""
    if len(facts.processes) < 2:
        return None
    groups: dict[str, list[dict[str, Any]]] = {}
    for process in facts.processes:
        groups.setdefault(_kind(process["role"]), []).append(process)
    total = sum(process["cpu_s"] for process in facts.processes)
    if total < facts.min_s:
        return None
    ordered = sorted(groups.items(),
                     key=lambda item: (item[0] != "main", -sum(p["cpu_s"] for p in item[1])))
    parts = []
    first = None
    # heatline -- CMD's root runs no Python of its own unless it is a Python process itself.
    ordered = [(role, members) for role, members in ordered
               if role != "command" or sum(p["cpu_s"] for p in members) > 0]
    for role, members in ordered[:3]:
        cpu = sum(p["cpu_s"] for p in members)
        name = "the main process" if role == "main" else _plural(len(members), role)
        part = f"{name} {_pct(cpu / total)} ({_seconds(cpu)}"
        busiest = facts.busiest_line(facts.own[str(p["pid"])] for p in members
                                     if str(p["pid"]) in facts.own)
        if busiest is not None:
            part += f", most at {facts.place(busiest[0], busiest[1])}"
            first = first or busiest
        parts.append(part + ")")
    rest = ordered[3:]
    if rest:
        cpu = sum(p["cpu_s"] for _, members in rest for p in members)
        parts.append(f"{sum(len(m) for _, m in rest)} other processes {_pct(cpu / total)}")
    return {"text": f"CPU time by process: {', '.join(parts)}.",
            "file": first[0] if first else None, "line": first[1] if first else None}


def _starvation(facts: _Facts, found: dict[str, Any]) -> dict[str, Any] | None:
    """The training loop waits for DataLoader workers: the main thread blocked under torch's
    DataLoader for STARVED_SHARE of its time (imports left out)."""
    total, waits = facts.main_waits()
    waiting = {key: s for key, s in waits.items() if key[2] == "DataLoader workers"}
    seconds = sum(waiting.values())
    if total <= 0 or seconds < facts.min_s or seconds < STARVED_SHARE * total:
        return None
    path, line, _ = max(waiting, key=lambda key: waiting[key])
    text = (f"The training loop is starved of data: the main thread waits for DataLoader "
            f"workers {_pct(seconds / total)} of its time ({_seconds(seconds)}, imports left "
            f"out) at {facts.place(path, line)}")
    workers = [p for p in facts.processes if p["role"] == "DataLoader worker"]
    elapsed = sum(p["elapsed_s"] for p in workers)
    if workers and elapsed > 0:
        busy = sum(p["python_s"] + p["native_s"] for p in workers)
        own = [facts.own[str(p["pid"])] for p in workers if str(p["pid"]) in facts.own]
        function = _busiest_function(own)
        text += (f"; its {_plural(len(workers), 'worker')} are busy "
                 f"{_pct(min(busy / elapsed, 1.0))} of their time")
        if function is not None and busy > 0:
            name, where, seconds_in = function
            text += f", {_pct(seconds_in / busy)} of it in {name} ({where})"
        if busy >= WORKERS_BUSY_SHARE * elapsed:
            text += ": make their work cheaper, or add workers (num_workers)"
        else:
            text += ": they wait too (heatline view --pid PID shows one)"
    return {"text": text + ".", "file": path, "line": line}


def _busiest_function(profiles: list[Profile]) -> tuple[str, str, float] | None:
    """(function, file:line, running seconds) of the function with the most running time over
    these processes' own profiles, the comprehensions and closures it defines counted as its
    own (``blur``, not ``blur.<locals>.<listcomp>``), located at its busiest line."""
    from heatline.data.queries import function_of_line

    by_function: dict[tuple[str, str], float] = {}
    by_line: dict[tuple[str, str], dict[int, float]] = {}
    for own in profiles:
        for path, entry in (own.get("files") or {}).items():
            for line in entry.get("lines", []):
                seconds = line["python_s"] + line["native_s"]
                if seconds <= 0:
                    continue
                key = (path, function_of_line(entry, line).split(".<locals>.")[0])
                by_function[key] = by_function.get(key, 0.0) + seconds
                lines = by_line.setdefault(key, {})
                lines[line["line"]] = lines.get(line["line"], 0.0) + seconds
    if not by_function:
        return None
    key, seconds = max(by_function.items(), key=lambda item: (item[1], item[0]))
    number = max(by_line[key].items(), key=lambda item: (item[1], -item[0]))[0]
    return key[1], _where_of(profiles, key[0], number), seconds


def _where_of(profiles: list[Profile], path: str, line: int) -> str:
    program = profiles[0].get("program", "") if profiles else ""
    base = os.path.dirname(program) if os.path.isabs(program) else ""
    if base and path.startswith(base + os.sep):
        path = path[len(base) + 1:]
    return f"{path}:{line}"


def _main_wait(facts: _Facts, found: dict[str, Any]) -> dict[str, Any] | None:
    """What the main thread waits on, and for how long: blocked WAIT_SHARE of its time
    (imports left out); the places holding WAIT_PLACE_SHARE of that waiting are named."""
    total, waits = facts.main_waits()
    if "dataloader_starvation" in found:  # said already
        waits = {key: s for key, s in waits.items() if key[2] != "DataLoader workers"}
    seconds = sum(waits.values())
    if total <= 0 or seconds < facts.min_s or seconds < WAIT_SHARE * total:
        return None
    named = sorted(((s, key) for key, s in waits.items() if s >= WAIT_PLACE_SHARE * seconds),
                   key=lambda item: (-item[0], item[1]))[:2]
    if not named:
        return None
    places = [f"{_seconds(s)} for {what} at {facts.place(path, line)}"
              for s, (path, line, what) in named]
    _, (path, line, _) = named[0]
    return {"text": f"The main thread waits {_pct(seconds / total)} of its time "
                    f"({_seconds(seconds)}, imports left out): {'; '.join(places)}.",
            "file": path, "line": line}


def _worker_threads(facts: _Facts, found: dict[str, Any]) -> dict[str, Any] | None:
    """The main thread mostly waits (blocked THREADS_MAIN_WAIT_SHARE of its time, imports left
    out) while other threads of its process do the work (THREADS_WORK_SHARE of the process's
    running time in user code, MIN_SAMPLES' worth): the function those threads spent most
    running time in (the innermost user frame's; comprehensions counted as their function),
    and its busiest line."""
    total, waits = facts.main_waits()
    waited = sum(waits.values())
    if facts.main_thread is None or total <= 0 or waited < THREADS_MAIN_WAIT_SHARE * total:
        return None
    pid = facts.thread_pid[facts.main_thread]
    running = 0.0  # the process's running time in user code, every thread
    by_function: dict[tuple[str, str], float] = {}
    by_line: dict[tuple[str, str], dict[int, float]] = {}
    threads: dict[int, float] = {}  # thread -> its running time in user code
    for stack in facts.stacks:
        seconds = stack.python_s + stack.native_s
        position = facts.user_frame(stack.frames)
        if (seconds <= 0 or position is None or facts.thread_pid[stack.thread] != pid
                or facts.importing(stack.frames)):
            continue
        running += seconds
        if stack.thread == facts.main_thread:
            continue
        threads[stack.thread] = threads.get(stack.thread, 0.0) + seconds
        frame = facts.frames[stack.frames[position]]
        key = (frame["file"], _enclosing(frame.get("qualname") or frame.get("name") or "?"))
        by_function[key] = by_function.get(key, 0.0) + seconds
        lines = by_line.setdefault(key, {})
        lines[frame["line"]] = lines.get(frame["line"], 0.0) + seconds
    work = sum(by_function.values())
    if work < facts.min_s or work < THREADS_WORK_SHARE * running:
        return None
    (path, function), seconds = max(by_function.items(), key=lambda item: (item[1], item[0]))
    line = max(by_line[(path, function)].items(), key=lambda item: (item[1], -item[0]))[0]
    count = len(threads)
    first = next((f.get("first_line") for f in (facts.files.get(path) or {}).get("functions", [])
                  if f.get("qualname") == function and f.get("first_line")), None)
    defined = f" ({facts.where(path, first)})" if first else ""
    return {"text": f"While the main thread waits, {_plural(count, 'other thread')}"
                    f"{_thread_names(facts, threads)} {'runs' if count == 1 else 'run'} "
                    f"{_seconds(work)} "
                    f"({_pct(work / running)} of the running time), {_pct(seconds / work)} of "
                    f"it in {function}{defined}, most at {facts.place(path, line)}.",
            "file": path, "line": line}


def _thread_names(facts: _Facts, threads: dict[int, float]) -> str:
    """" (loader, writer)": the threads' names, busiest first (at most THREAD_NAMES of them,
    then how many more), where every one of them has a name; else ""."""
    names = []
    for index in sorted(threads, key=lambda i: (-threads[i], i)):
        name = facts.threads[index].get("name") if 0 <= index < len(facts.threads) else None
        if not name:
            return ""
        names.append(name)
    if not names:
        return ""
    shown = ", ".join(names[:THREAD_NAMES])
    more = len(names) - THREAD_NAMES
    return f" ({shown}{f' and {more} more' if more > 0 else ''})"


def _enclosing(qualname: str) -> str:
    """A comprehension's or generator expression's function: ``f`` for
    ``f.<locals>.<listcomp>``; other names as they are."""
    import re  # here, not at the top: only a run with working threads needs it

    return re.sub(r"(\.<locals>)?\.<(listcomp|dictcomp|setcomp|genexpr)>$", "", qualname)


def _gil(facts: _Facts, found: dict[str, Any]) -> dict[str, Any] | None:
    """GIL contention between Python threads of one process: at least two threads ran
    Python, and threads were blocked at lines that only run Python (GIL_PYTHON_SHARE of their
    running time Python, no call below them) for GIL_WAIT_SHARE of those lines' time and
    GIL_WALL_SHARE of the process's wall time. The engine charges a thread waiting for the GIL
    as blocked (system) at its line; on such a line nothing else blocks."""
    best = None
    for pid, threads in facts.process_threads().items():
        # Two threads ran Python, together MIN_SAMPLES' worth (each of many short threads may
        # have only a sample or two of its own).
        running = [t for t in threads if facts.threads[t].get("python_s", 0) >= facts.interval]
        if (len(running) < 2
                or sum(facts.threads[t].get("python_s", 0) for t in running) < facts.min_s):
            continue
        # Per thread: [Python time, blocked time] on its pure-Python lines.
        per_thread: dict[int, list[float]] = {}
        by_line: dict[tuple[str, int], float] = {}
        python_lines: dict[tuple[str, int], bool] = {}
        for (thread, path, line), (py, _, system) in facts.direct.items():
            if thread not in threads:
                continue
            if (path, line) not in python_lines:
                python_lines[(path, line)] = facts.is_python_line(threads, path, line)
            if not python_lines[(path, line)]:
                continue
            into = per_thread.setdefault(thread, [0.0, 0.0])
            into[0] += py
            into[1] += system
            if system > 0:
                by_line[(path, line)] = by_line.get((path, line), 0.0) + system
        waiting_threads = [t for t, (_, system) in per_thread.items() if system > 0]
        python = sum(per_thread[t][0] for t in waiting_threads)
        waited = sum(per_thread[t][1] for t in waiting_threads)
        elapsed = facts.process_elapsed(pid)
        if (waited < facts.min_s or waited < GIL_WAIT_SHARE * (waited + python)
                or waited < GIL_WALL_SHARE * elapsed):
            continue
        if best is None or waited > best[0]:
            best = (waited, python, by_line, len(waiting_threads))
    if best is None:
        return None
    waited, python, by_line, waiting = best
    (path, line), _ = max(by_line.items(), key=lambda item: (item[1], item[0]))
    return {"text": f"GIL contention: {waiting} threads running Python wait {_seconds(waited)} "
                    f"for the GIL ({_pct(waited / (waited + python))} of their time on "
                    "pure-Python lines), "
                    f"most at {facts.place(path, line)}: threads running Python take turns, "
                    "so they do not run in parallel; processes (multiprocessing) or native "
                    "code that releases the GIL would.",
            "file": path, "line": line}


def _pool_imbalance(facts: _Facts, found: dict[str, Any]) -> dict[str, Any] | None:
    """One pool worker busy, the others idle: among the workers of one pool (same parent and
    role), the busiest did IMBALANCE_RATIO times the mean of the others' running time."""
    pools: dict[tuple[int, str], list[dict[str, Any]]] = {}
    for process in facts.processes:
        if process["role"] in _POOL_ROLES:
            pools.setdefault((process["ppid"], process["role"]), []).append(process)
    best = None
    for (_, role), workers in pools.items():
        if len(workers) < 2:
            continue
        busy = [(p["python_s"] + p["native_s"], p) for p in workers]
        busy.sort(key=lambda item: (-item[0], item[1]["pid"]))
        top, worker = busy[0]
        others = [seconds for seconds, _ in busy[1:]]
        mean = sum(others) / len(others)
        total = top + sum(others)
        if total < 2 * facts.min_s or top < IMBALANCE_RATIO * mean:
            continue
        if best is None or top > best[0]:
            best = (top, worker, mean, total, role, len(workers))
    if best is None:
        return None
    top, worker, mean, total, role, count = best
    text = (f"Pool imbalance: the busiest of {_plural(count, role)} (pid {worker['pid']}) did "
            f"{_pct(top / total)} of the pool's work ({_seconds(top)} running, the others "
            f"{_seconds(mean)} on average)")
    busiest = facts.busiest_line([facts.own[str(worker["pid"])]]
                                 if str(worker["pid"]) in facts.own else [])
    path = line = None
    if busiest is not None:
        path, line, _ = busiest
        text += f", most at {facts.place(path, line)}"
    text += (": a few long tasks keep one worker busy while the others idle; smaller or more "
             "even tasks (and chunksize=1) spread them.")
    return {"text": text, "file": path, "line": line}


def _hot_lines(facts: _Facts, found: dict[str, Any]) -> dict[str, Any] | None:
    """The lines with the most running time (python + native, all threads and processes),
    each with HOT_LINE_SHARE of it, and what their kind suggests."""
    totals = facts.profile.get("totals") or {}
    running = totals.get("python_s", 0.0) + totals.get("native_s", 0.0)
    if running < facts.min_s:
        return None
    rows = sorted(
        ((line["python_s"] + line["native_s"], path, line) for (path, _), line in
         facts.lines.items() if line["python_s"] + line["native_s"] >= HOT_LINE_SHARE * running),
        key=lambda row: (-row[0], row[1], row[2]["line"]))[:2]
    if not rows:
        return None
    parts = []
    for number, (seconds, path, line) in enumerate(rows):
        if facts.mostly_importing(path, line["line"]):
            kind = "importing modules"
            meaning = "a cost paid once per process"
        elif line["python_s"] >= KIND_SHARE * seconds:
            kind = f"{_pct(line['python_s'] / seconds)} Python"
            meaning = ("the interpreter's own work on the line, where fewer iterations, "
                       "numpy or compiled code help")
        elif line["native_s"] >= KIND_SHARE * seconds:
            kind = f"{_pct(line['native_s'] / seconds)} native"
            meaning = ("time inside the native code it calls, which fewer or larger calls or a "
                       "cheaper operation would cut, and changing the Python around it would not")
        else:
            kind = (f"{_pct(line['python_s'] / seconds)} Python, "
                    f"{_pct(line['native_s'] / seconds)} native")
            meaning = ""
        share = _pct(seconds / running)
        if number == 0:
            text = (f"The busiest line is {facts.place(path, line['line'])} ({share} of the "
                    f"running time, {kind}{': ' + meaning if meaning else ''})")
        else:
            text = f"next {facts.place(path, line['line'])} ({share}, {kind})"
        parts.append(text)
    _, path, line = rows[0]
    return {"text": "; ".join(parts) + ".", "file": path, "line": line["line"]}


def _copies(facts: _Facts, found: dict[str, Any]) -> dict[str, Any] | None:
    """Copy volume: the line that copied the most, when that is COPY_MIN_BYTES, COPY_REPEAT
    times the most memory the line held at once (the same data copied again and again, not
    read in once), and the line has COPY_TIME_SHARE of all running time (it matters)."""
    memory = facts.profile.get("memory") or {}
    totals = facts.profile.get("totals") or {}
    running = totals.get("python_s", 0.0) + totals.get("native_s", 0.0)
    if not memory.get("enabled") or running <= 0:
        return None
    candidates = [(line.get("copy_bytes", 0), path, line) for (path, _), line in
                  facts.lines.items() if line.get("copy_bytes", 0) >= COPY_MIN_BYTES]
    if not candidates:
        return None
    copied, path, line = max(candidates, key=lambda row: (row[0], row[1], row[2]["line"]))
    seconds = line["python_s"] + line["native_s"]
    held = line.get("peak_bytes", 0)
    if copied < COPY_REPEAT * held or seconds < COPY_TIME_SHARE * running:
        return None
    everything = max(memory.get("copy_bytes", 0), copied)
    times = f", {copied / held:.0f} times the most it held at once," if held else ""
    return {"text": f"Copies: {facts.place(path, line['line'])} copied "
                    f"{units.format_size(copied)}{times} in {_seconds(seconds)} of running time "
                    f"({_pct(copied / everything)} of all copying): the same data is copied "
                    "again and again; a view, an in-place operation or a buffer made once "
                    "avoids that.",
            "file": path, "line": line["line"]}


def _leaks(facts: _Facts, found: dict[str, Any]) -> dict[str, Any] | None:
    """Likely leaks (the leak rule of data/memory.py) that hold LEAK_MIN_BYTES at the end,
    the one holding the most named."""
    leaking = sorted(((line["growth_bytes"], path, line) for (path, number), line in
                      facts.lines.items()
                      if line.get("leak") and not facts.mostly_importing(path, number)),
                     key=lambda row: (-row[0], row[1], row[2]["line"]))
    if not leaking or leaking[0][0] < LEAK_MIN_BYTES:
        return None
    held, path, line = leaking[0]
    text = (f"Likely leak: {facts.place(path, line['line'])} still holds "
            f"{units.format_size(held)} at the end, grown steadily "
            f"({units.format_size(line['leak']['growth_bytes_per_s'])}/s)")
    if len(leaking) > 1:
        rest = sum(row[0] for row in leaking[1:])
        text += (f"; {len(leaking) - 1} more line{'s' if len(leaking) > 2 else ''} likely "
                 f"leak{'' if len(leaking) > 2 else 's'} {units.format_size(rest)}")
    return {"text": text + ".", "file": path, "line": line["line"]}


def _peak(facts: _Facts, found: dict[str, Any]) -> dict[str, Any] | None:
    """The memory peak and the lines that held it: each line's live memory at the moment of
    the program's peak (its timeline's value then), those holding PEAK_HOLDER_SHARE named."""
    profile = facts.profile
    peak = profile.get("peak_bytes", 0)
    if not (profile.get("memory") or {}).get("enabled") or peak < PEAK_MIN_BYTES:
        return None
    timeline = profile.get("memory_timeline") or []
    at = profile.get("peak_at")
    moment = max(timeline, key=lambda point: point[1])[0] if timeline else (at or {}).get("t_s")
    holders = []
    if moment is not None:
        for (path, number), line in facts.lines.items():
            held = value_at(line.get("timeline") or [], moment)
            if held >= PEAK_HOLDER_SHARE * peak:
                holders.append((held, path, number))
    holders.sort(key=lambda row: (-row[0], row[1], row[2]))
    text = f"Memory peaked at {units.format_size(peak)}"
    if moment is not None:
        text += f" {_seconds(moment)} into the run"
    if holders:
        named = [f"{facts.place(path, number)} {units.format_size(held)}"
                 for held, path, number in holders[:2]]
        _, path, line = holders[0]
        return {"text": f"{text}, held by {' and '.join(named)}.", "file": path, "line": line}
    if at:
        return {"text": f"{text}, while {facts.place(at['file'], at['line'])} was allocating.",
                "file": at["file"], "line": at["line"]}
    return {"text": text + ".", "file": None, "line": None}




def _gpu(facts: _Facts, found: dict[str, Any]) -> dict[str, Any] | None:
    """Low device utilisation (below GPU_LOW_PCT on average over GPU_MIN_SAMPLES samples) and
    its cause on the CPU side: the data-loader starvation or the main thread's wait when those
    rules fired, else the main thread's busiest line."""
    gpu = facts.profile.get("gpu") or {}
    devices = [d for d in gpu.get("devices", []) if d.get("samples", 0) >= GPU_MIN_SAMPLES
               and d.get("utilisation_pct", 100.0) < GPU_LOW_PCT] if gpu.get("enabled") else []
    if not devices:
        return None
    device = min(devices, key=lambda d: d["utilisation_pct"])
    text = (f"GPU {device['index']} is busy only {device['utilisation_pct']:.0f}% of the time "
            f"(idle in {_pct(device.get('idle_share', 0.0))} of its samples): the CPU side "
            "does not keep it fed")
    cause = found.get("dataloader_starvation") or found.get("main_wait")
    if cause is not None and cause["file"] is not None:
        what = ("waits for DataLoader workers" if "dataloader_starvation" in found
                else "waits")
        text += f"; the main thread {what} at {facts.place(cause['file'], cause['line'])}"
        return {"text": text + ".", "file": cause["file"], "line": cause["line"]}
    busiest = _main_thread_busiest(facts)
    if busiest is None:
        return {"text": text + ".", "file": None, "line": None}
    path, line, share = busiest
    text += (f"; the main thread spends {_pct(share)} of its running time at "
             f"{facts.place(path, line)}")
    return {"text": text + ".", "file": path, "line": line}


def _main_thread_busiest(facts: _Facts) -> tuple[str, int, float] | None:
    """(file, line, share of its running time) of the main thread's busiest user line,
    imports left out."""
    busy: dict[tuple[str, int], float] = {}
    total = 0.0
    for stack in facts.stacks:
        if stack.thread != facts.main_thread or facts.importing(stack.frames):
            continue
        seconds = stack.python_s + stack.native_s
        position = facts.user_frame(stack.frames)
        if position is None or seconds <= 0:
            continue
        total += seconds
        frame = facts.frames[stack.frames[position]]
        key = (frame["file"], frame["line"])
        busy[key] = busy.get(key, 0.0) + seconds
    if not busy:
        return None
    (path, line), seconds = max(busy.items(), key=lambda item: (item[1], item[0]))
    return path, line, seconds / total


def _threads_by_process(facts: _Facts) -> dict[Any, int]:
    """How many threads of each process were busy (running or waiting for a CPU) at least
    BUSY_THREAD_SHARE of its time: its Python threads by their charged time, its other threads
    (BLAS, torch's pools) by their CPU time."""
    busy: dict[Any, int] = {}
    for index, thread in enumerate(facts.threads):
        pid = facts.thread_pid[index]
        elapsed = facts.process_elapsed(pid)
        if thread.get("python") is False:
            seconds = thread.get("cpu_s", 0.0)
        else:
            seconds = (thread.get("python_s", 0.0) + thread.get("native_s", 0.0)
                       + thread.get("cpu_wait_s", 0.0))
        if elapsed > 0 and seconds >= BUSY_THREAD_SHARE * elapsed:
            busy[pid] = busy.get(pid, 0) + 1
    return busy


def _cpu_waits(facts: _Facts) -> tuple[float, float, float] | None:
    """(seconds waiting for a CPU, their share of running + waiting, CPUs wanted on average)
    when the waits are WAITING_SHARE of the time the threads were ready to run, else None.
    CPUs wanted: the processes' CPU time and waits over the run's wall time, the average
    number of their threads ready to run."""
    totals = facts.profile.get("totals") or {}
    waited = totals.get("cpu_wait_s", 0.0)
    running = totals.get("python_s", 0.0) + totals.get("native_s", 0.0)
    elapsed = facts.profile.get("elapsed_s", 0.0)
    if waited < facts.min_s or waited < WAITING_SHARE * (waited + running) or elapsed <= 0:
        return None
    wanted = (facts.profile.get("cpu_s", 0.0) + waited) / elapsed
    return waited, waited / (waited + running), wanted


def _most_waiting_line(facts: _Facts) -> tuple[str, int] | None:
    waits = {key: line.get("cpu_wait_s", 0.0) for key, line in facts.lines.items()}
    key = max(waits, key=lambda key: (waits[key], key), default=None)
    return key if key is not None and waits[key] > 0 else None


def _oversubscription(facts: _Facts, found: dict[str, Any]) -> dict[str, Any] | None:
    """The program wants more CPUs than the machine has: its threads waited for a CPU
    WAITING_SHARE of the time they were ready to run, and wanted OVERSUBSCRIBED_RATIO times
    the machine's CPUs (profile cpu_count) on average."""
    waits = _cpu_waits(facts)
    cpus = facts.profile.get("cpu_count")
    if waits is None or not cpus:
        return None
    waited, share, wanted = waits
    if wanted < OVERSUBSCRIBED_RATIO * cpus:
        return None
    busy = _threads_by_process(facts)
    per_process = max(busy.values(), default=1)
    if len(facts.processes) > 1:
        roles: dict[str, int] = {}
        for process in facts.processes:  # "multiprocessing process (ForkProcess-1)": by kind
            role = _kind(process["role"]).split(" (")[0]
            roles[role] = roles.get(role, 0) + 1
        who = (f"the {len(facts.processes)} processes ("
               + ", ".join(_plural(n, role) if n > 1 else role for role, n in roles.items())
               + ")")
        if per_process > 1:
            who += f" with up to {per_process} busy threads each"
    else:
        roles = {}
        who = f"its {per_process} busy threads" if per_process > 1 else "its threads"
    advice = []
    if "DataLoader worker" in roles:
        advice.append("DataLoader(num_workers=...)")
    if "Pool worker" in roles:
        advice.append("Pool(processes=...)")
    if "ProcessPoolExecutor worker" in roles:
        advice.append("ProcessPoolExecutor(max_workers=...)")
    if per_process > 1:
        advice.append("torch.set_num_threads(...) or OMP_NUM_THREADS for the threads of each "
                      "process")
    if not advice:
        advice.append("fewer processes or threads at once (a Pool's processes, DataLoader "
                      "num_workers, torch.set_num_threads, OMP_NUM_THREADS)")
    text = (f"Oversubscribed: {who} wanted {wanted:.1f} CPUs on average on a {cpus}-CPU "
            f"machine, so {_pct(share)} of their time ({_seconds(waited)}) was spent waiting "
            "for one")
    place = _most_waiting_line(facts)
    if place is not None:
        text += f", most at {facts.place(*place)}"
    text += (f": keep the busy threads of all processes together to about {cpus} with "
             f"{' or '.join(advice)}.")
    path, line = place if place is not None else (None, None)
    return {"text": text, "file": path, "line": line}


def _busy_machine(facts: _Facts, found: dict[str, Any]) -> dict[str, Any] | None:
    """The machine was busy with other programs: the run's threads waited for a CPU
    WAITING_SHARE of the time they were ready to run while wanting fewer CPUs than the
    oversubscription rule's threshold."""
    waits = _cpu_waits(facts)
    cpus = facts.profile.get("cpu_count")
    if waits is None or "oversubscription" in found:
        return None
    waited, share, wanted = waits
    if cpus and wanted >= OVERSUBSCRIBED_RATIO * cpus:
        return None
    of = f" of the machine's {cpus}" if cpus else ""
    return {"text": f"The machine was busy: this run's threads wanted {wanted:.1f} CPUs{of} on "
                    f"average, yet {_pct(share)} of their time ({_seconds(waited)}) was spent "
                    "waiting for one, held by other programs; on an idle machine the run would "
                    "take that much less.",
            "file": None, "line": None}


def slow_steps(durations: list[float]) -> tuple[list[int], list[int], float]:
    """(warm-up steps, other slow steps, median): the 0-based indices of the steps that took
    at least STEP_RATIO times the median and STEP_MIN_EXTRA_S more; the warm-up ones are the
    leading run of them from the first step on. Nothing with fewer than STEP_MIN_COUNT
    steps."""
    if len(durations) < STEP_MIN_COUNT:
        return [], [], 0.0
    ordered = sorted(durations)
    middle = len(ordered) // 2
    median = ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
    slow = [index for index, duration in enumerate(durations)
            if duration >= STEP_RATIO * median and duration - median >= STEP_MIN_EXTRA_S]
    warmup = []
    for index in slow:
        if index != len(warmup):
            break
        warmup.append(index)
    return warmup, slow[len(warmup):], median


def _steps(facts: _Facts, found: dict[str, Any]) -> dict[str, Any] | None:
    """Steps that stand out from the program's usual step: the first ones (warm-up) and any
    later one, each with its time and how many times the median that is."""
    steps = facts.profile.get("steps")
    durations = (steps or {}).get("durations_s") or []
    warmup, slow, median = slow_steps(durations)
    if not warmup and not slow:
        return None
    usual = f"the median {_step_seconds(median)}"

    def named(index: int) -> str:
        return (f"step {index + 1} took {_step_seconds(durations[index])}, "
                f"{durations[index] / median:.1f}x")

    parts = []
    if warmup:
        if len(warmup) == 1:
            parts.append(f"{named(0)} {usual} (warm-up: the first step)")
        else:
            taken = ", ".join(_step_seconds(durations[index]) for index in warmup)
            parts.append(f"the first {len(warmup)} steps took {taken}, over "
                         f"{STEP_RATIO:g}x {usual} each (warm-up)")
    if slow:
        shown = sorted(sorted(slow, key=lambda index: -durations[index])[:STEP_NAMED])
        words = [named(index) for index in shown]
        words[0] += " the median" if warmup else f" {usual}"
        slowest = max(shown, key=lambda index: durations[index])
        where = _slow_step_region(facts.profile, steps, slowest)
        if where:
            words[shown.index(slowest)] += where
        text = "; ".join(words)
        if len(slow) > len(shown):
            text += f" ({len(slow) - len(shown)} more over {STEP_RATIO:g}x the median)"
        parts.append(text)
    source = "Optimizer.step()" if steps.get("source") == "optimizer" else "heatline.step()"
    text = "; ".join(parts)
    return {"text": f"Slow steps ({len(durations)} marked by {source}): {text}.",
            "file": None, "line": None}


def _slow_step_region(profile: Profile, steps: dict[str, Any], index: int) -> str:
    """Where step ``index``'s extra time went, from the regions' spans (their slices): the
    region that spent the most more in it than in a usual step, ", 0.40 s of it in region
    data (top line train.py:50)"; "" when no region accounts for at least half the extra.
    Of regions nested in one another with nearly the same extra (within 20%), the innermost."""
    started = steps.get("started_s") or []
    durations = steps.get("durations_s") or []
    if index >= len(started) or len(started) != len(durations):
        return ""
    windows = list(zip(started, (s + d for s, d in zip(started, durations))))
    best: list[tuple[float, float, dict[str, Any]]] = []  # (extra, time in the step, region)
    for region in profile.get("regions") or []:
        spans = region.get("slices") or []
        if not spans:
            continue
        per_step = [sum(max(0.0, min(end, b) - max(start, a)) for _, start, end in spans)
                    for a, b in windows]
        usual = sorted(per_step)[len(per_step) // 2]
        best.append((per_step[index] - usual, per_step[index], region))
    if not best:
        return ""
    extra_step = durations[index] - sorted(durations)[len(durations) // 2]
    top = max(extra for extra, _, _ in best)
    if top <= 0 or top < 0.5 * extra_step:
        return ""
    close = [item for item in best if item[0] >= 0.8 * top]
    extra, spent, region = max(close, key=lambda item: (item[2]["path"].count("/"), item[0]))
    text = f", {_step_seconds(spent)} of it in region {region['path']}"
    lines = region.get("top_lines") or []
    if lines:
        text += f" (top line {os.path.basename(lines[0]['file'])}:{lines[0]['line']})"
    return text


def _step_seconds(value: float) -> str:
    """Two significant decimals for a step: 0.08 s, 0.50 s, 12.30 s; ms under 10 ms."""
    return f"{value * 1000:.1f} ms" if value < 0.01 else f"{value:.2f} s"


def _peer_groups(facts: _Facts) -> list[tuple[str, list[tuple[str, dict[str, Any], Profile]]]]:
    """The groups of peer processes with their own profiles, each (kind, [(name, process,
    own profile)]): torchrun's ranks ("rank N"), and each role of PEER_ROLES."""
    groups: dict[str, list[tuple[str, dict[str, Any], Profile]]] = {}
    for process in facts.processes:
        role = process.get("role", "")
        own = _own_profile(facts, process)
        if own is None:
            continue
        number = role[5:].split(" ")[0] if role.startswith("rank ") else ""
        if number.isdigit():
            groups.setdefault("rank", []).append((f"rank {number}", process, own))
        elif role in PEER_ROLES:
            where = process.get("address") or f"pid {process['pid']}"
            groups.setdefault(role, []).append((f"{role} {where}", process, own))
    return [(kind, sorted(members, key=_peer_order)) for kind, members in groups.items()
            if len(members) >= 2]


def _peer_order(member: tuple[str, dict[str, Any], Profile]) -> tuple[int, str]:
    name = member[0]
    return (int(name[5:]), "") if name.startswith("rank ") else (0, name)


def _own_profile(facts: _Facts, process: dict[str, Any]) -> Profile | None:
    """A process's own profile in ``process_profiles``, by its key there (queries.process_keys:
    its pid, or its host and pid where pids of several hosts' runs collide)."""
    for key, other in zip(facts.keys, facts.processes):
        if other is process:
            return facts.own.get(key)
    return None


def _peer_figures(facts: _Facts, own: Profile) -> tuple[dict[tuple[str, int], list[float]],
                                                         int, float]:
    """A peer's (file, line) -> [running, blocked] seconds at the program's lines (imports
    left out), its step count (0 without steps), and its time: its steps' time, else its wall
    time."""
    import re  # here, not at the top: only a run with peer processes needs it

    lines: dict[tuple[str, int], list[float]] = {}
    for path, entry in (own.get("files") or {}).items():
        for line in entry.get("lines", []):
            running = line.get("python_s", 0.0) + line.get("native_s", 0.0)
            blocked = line.get("system_s", 0.0)
            if (running > 0 or blocked > 0) and not re.match(_IMPORT_LINE, line.get("source", "")) \
                    and not facts.mostly_importing(path, line["line"]):
                lines[(path, line["line"])] = [running, blocked]
    steps = own.get("steps") or {}
    count = steps.get("count", 0) or 0
    durations = steps.get("durations_s") or []
    time = sum(durations) if count and durations else own.get("elapsed_s", 0.0)
    return lines, count, time


# An import statement's line: its time imports modules, wherever its stacks were cut (a deep
# import's stacks lose their middle frames, the program's import line among them).
_IMPORT_LINE = r"\s*(import\s|from\s+\S+\s+import\s)"


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def _stragglers(facts: _Facts, found: dict[str, Any]) -> dict[str, Any] | None:
    """Among peer processes (torchrun's ranks; Dask or Ray workers), the one that holds the
    others back: busy STRAGGLER_RATIO times the others' median (per step when every peer
    marked steps), by more than the sampling's noise (STRAGGLER_SIGMAS); named with the line
    where its excess is, and where the others wait meanwhile. Silent when the peers' work is
    balanced."""
    best = None
    for kind, members in _peer_groups(facts):
        figures = [_peer_figures(facts, own) for _, _, own in members]
        per_step = all(count > 0 for _, count, _ in figures)
        busy = [sum(r for r, _ in lines.values()) for lines, _, _ in figures]
        rates = [b / (count if per_step else 1) for b, (_, count, _) in zip(busy, figures)]
        top = max(range(len(members)), key=lambda i: (rates[i], -i))
        others = [i for i in range(len(members)) if i != top]
        usual = _median([rates[i] for i in others])
        # The counting noise of the straggler's busy time and of a median peer's.
        count_top = figures[top][1] if per_step else 1
        usual_busy = usual * count_top
        noise = facts.interval * ((busy[top] + usual_busy) / facts.interval) ** 0.5
        excess = busy[top] - usual_busy
        if (rates[top] < STRAGGLER_RATIO * usual or excess < STRAGGLER_SIGMAS * noise
                or excess < facts.min_s):
            continue
        if best is None or excess > best[0]:
            best = (excess, kind, members, figures, top, others, per_step)
    if best is None:
        return None
    _, kind, members, figures, top, others, per_step = best
    lines, count, _ = figures[top]

    def unit(i: int) -> int:
        return figures[i][1] if per_step else 1

    def others_at(key: tuple[str, int]) -> float:
        return sum(figures[i][0].get(key, [0.0, 0.0])[0] / unit(i) for i in others) / len(others)

    path, line = max(lines, key=lambda key: (lines[key][0] / unit(top) - others_at(key), key))
    each = " per step" if per_step else ""
    shown = _step_seconds if per_step else _seconds
    theirs = others_at((path, line))
    text = (f"{members[top][0]} is the straggler: {shown(lines[(path, line)][0] / unit(top))}"
            f"{each} at {facts.place(path, line)} where the others spend "
            f"{shown(theirs) if theirs else 'none'}")
    waits: dict[tuple[str, int], float] = {}
    for i in others:
        for key, (_, blocked) in figures[i][0].items():
            waits[key] = waits.get(key, 0.0) + blocked
    wait_key = max(waits, key=lambda key: (waits[key], key), default=None)
    their_time = sum(figures[i][2] for i in others)
    if wait_key is not None and their_time > 0 and waits[wait_key] >= facts.min_s:
        share = min(1.0, waits[wait_key] / their_time)
        if share >= STRAGGLER_WAIT_SHARE:
            names = [members[i][0] for i in others]
            who = ("ranks " + ", ".join(n[5:] for n in names) if kind == "rank" and len(names) > 1
                   else names[0] if len(names) == 1 else f"the other {_plural(len(names), kind)}")
            call = _called(facts, *wait_key)
            text += (f"; {who} wait{'s' if len(names) == 1 else ''} {call}"
                     f"({facts.where(*wait_key)}) {_pct(share)} of the time")
    return {"text": text + ".", "file": path, "line": line}


def _called(facts: _Facts, path: str, line: int) -> str:
    """``in NAME `` for the first call on a line (``dist.all_reduce(t)``: all_reduce), else
    ``at ``."""
    import re

    source = _without_comment((facts.lines.get((path, line)) or {}).get("source", ""))
    found = re.search(r"(\w+)\s*\(", source)
    return f"in {found.group(1)} " if found else "at "


def _tasks(facts: _Facts, found: dict[str, Any]) -> dict[str, Any] | None:
    """A distributed engine's task that took most of its workers' time (TASK_SHARE of all
    tasks' sampled time, MIN_SAMPLES at least): its share, runs, mean wall time per run and its
    top line; and the worker that ran most of it (TASK_WORKER_SHARE of the time at that line
    among the workers' own profiles), when one did."""
    tasks = facts.profile.get("tasks") or []

    def sampled(task: dict[str, Any]) -> float:
        return task.get("python_s", 0.0) + task.get("native_s", 0.0) + task.get("system_s", 0.0)

    total = sum(sampled(task) for task in tasks)
    if not tasks or total <= 0:
        return None
    top = max(tasks, key=lambda task: (sampled(task), task["name"]))
    share = sampled(top) / total
    if share < TASK_SHARE or sampled(top) < facts.min_s:
        return None
    count = top.get("count", 0)
    runs = f"{count} run{'s' if count != 1 else ''}"
    if count:
        runs += f", {_step_seconds(top.get('wall_s', 0.0) / count)} each"
    text = f"Task {top['name']} took {_pct(share)} of the workers' task time ({runs})"
    lines = top.get("lines") or []
    file = line = None
    if lines:
        file, line = lines[0]["file"], lines[0]["line"]
        text += f", most of it at {facts.place(file, line)}"
        worker = _busiest_worker(facts, file, line)
        if worker is not None:
            text += f"; {worker[0]} ran {_pct(worker[1])} of that"
    return {"text": text + ".", "file": file, "line": line}


def _busiest_worker(facts: _Facts, file: str, line: int) -> tuple[str, float] | None:
    """The peer worker with TASK_WORKER_SHARE of the time at (file, line) among the peers'
    own profiles, as (its name, its share), or None."""
    times = []
    for _, members in _peer_groups(facts):
        for name, _, own in members:
            entry = (own.get("files") or {}).get(file) or {}
            at = sum(row.get("python_s", 0.0) + row.get("native_s", 0.0) + row.get("system_s", 0.0)
                     for row in entry.get("lines", []) if row.get("line") == line)
            times.append((name, at))
    total = sum(at for _, at in times)
    if len(times) < 2 or total <= 0:
        return None
    name, at = max(times, key=lambda item: item[1])
    return (name, at / total) if at / total >= TASK_WORKER_SHARE else None


_RULES = {
    "steps": _steps,
    "stragglers": _stragglers,
    "tasks": _tasks,
    "processes": _processes,
    "oversubscription": _oversubscription,
    "busy_machine": _busy_machine,
    "dataloader_starvation": _starvation,
    "gpu_utilisation": _gpu,
    "main_wait": _main_wait,
    "worker_threads": _worker_threads,
    "gil_contention": _gil,
    "pool_imbalance": _pool_imbalance,
    "hot_lines": _hot_lines,
    "copy_volume": _copies,
    "leaks": _leaks,
    "memory_peak": _peak,
}
assert set(_RULES) == set(ORDER)
