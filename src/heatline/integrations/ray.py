"""heatline.ray: profile the worker processes of a Ray job and read them as one profile.

    ray.init(runtime_env=heatline.ray.runtime_env())
    with heatline.ray.profile_workers("job.json", cpu_only=True) as p:
        ray.get([work.remote(n) for n in range(100)])

Why two calls (docs/integrations.md, "Ray"): Ray gives no way to run code in worker processes
that already run, and its documented way to run code in every worker it starts is the job's
``runtime_env={"worker_process_setup_hook": ...}``, fixed when the driver connects. So the
hook (:func:`runtime_env`) goes in at ``ray.init``, and :func:`profile_workers` marks the
window. The hook starts a reporter thread in each worker that looks for the block's collector,
a named actor (HeatlineCollector), twice a second; once it finds one it starts heatline's
engine with the block's options, waits for the block's end (a call to the collector that
returns then), stops the engine and sends its profile to the collector (Ray's own object
transfer). The driver merges them (heatline/data/merge.py) with its own profile, and the
`tasks` table (heatline/data/tasks.py) from Ray's task events (``ray.timeline()``).

Imported by ``heatline.ray`` only (heatline/__init__.py), so a plain run never imports Ray;
Ray itself is imported inside the functions.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

from heatline.api import HeatlineError, Profile, options_from_keywords, start_with_options, stop
from heatline.data.merge import merge_processes
from heatline.data.tasks import tasks_table

NAME = "heatline_collector"  # the collector actor's name, in NAMESPACE
NAMESPACE = "heatline"
POLL_S = 0.5  # how often a worker's reporter looks for a collector
SETTLE_S = 3 * POLL_S  # the block starts once no worker joined for this long
START_LIMIT_S = 30.0  # ...or after this long
GATHER_TIMEOUT_S = 60.0  # the default wait for the workers' profiles at the block's end

# The hook Ray runs in each worker at its start. A function Ray's cloudpickle carries by
# value (its module is no importable one), so that a worker whose Python cannot import
# heatline still runs it: it says so to the collector instead of failing the worker's start.
_HOOK_SOURCE = '''
def heatline_worker_setup():
    try:
        from heatline.integrations.ray import worker_setup
    except Exception as exc:  # heatline not importable here: say so, run the worker anyway
        import threading
        problem = f"heatline cannot be imported by {sys.executable}: {exc!r}"
        threading.Thread(target=heatline_report_unloadable, args=(problem,), daemon=True,
                         name="heatline-ray-reporter").start()
        return
    worker_setup()


def heatline_report_unloadable(problem):
    import ray
    info = {"pid": os.getpid(), "host": socket.gethostname(),
            "worker_id": ray.get_runtime_context().get_worker_id()}
    reported = set()
    while True:
        try:
            # Listed first: a failed get_actor writes a warning to the worker's log each time.
            if {"name": NAME, "namespace": NAMESPACE} not in \
                    ray.util.list_named_actors(all_namespaces=True):
                time.sleep(POLL_S)
                continue
            collector = ray.get_actor(NAME, namespace=NAMESPACE)
            token = ray.get(collector.session.remote())[0]
            if token not in reported:
                ray.get(collector.problem.remote(dict(info, problem=problem)))
                reported.add(token)
        except Exception:
            pass
        time.sleep(POLL_S)
'''


def _make_hook() -> Any:
    namespace: dict[str, Any] = {"__name__": "heatline_ray_hook", "os": os, "socket": socket,
                                 "sys": sys, "time": time, "NAME": NAME,
                                 "NAMESPACE": NAMESPACE, "POLL_S": POLL_S}
    exec(compile(_HOOK_SOURCE, "<heatline.ray hook>", "exec"), namespace)  # noqa: S102
    return namespace["heatline_worker_setup"]


_HOOK = _make_hook()


def runtime_env(env: dict[str, Any] | None = None) -> dict[str, Any]:
    """``env`` (a Ray runtime_env, default none) with heatline's worker set-up hook, for
    ``ray.init(runtime_env=...)``. A runtime_env with a hook of its own is refused: call
    :func:`worker_setup` from that hook instead."""
    result = dict(env or {})
    if result.get("worker_process_setup_hook") not in (None, _HOOK):
        raise HeatlineError(
            "this runtime_env has a worker_process_setup_hook of its own: call "
            "heatline.ray.worker_setup() from it instead of using heatline.ray.runtime_env()"
        )
    result["worker_process_setup_hook"] = _HOOK
    return result


# --- in each worker ----------------------------------------------------------------------------

_reporter: _Reporter | None = None


def _is_collector() -> bool:
    """Whether this process runs the collector actor: it profiles nothing itself."""
    import ray

    return ray.get_runtime_context().get_actor_name() == NAME


def worker_setup() -> None:
    """Ray's worker set-up hook (:func:`runtime_env`): start the reporter that profiles this
    worker during each :func:`profile_workers` block. Once per process. A worker starting
    while a block runs joins it within POLL_S."""
    global _reporter
    if _reporter is not None:
        return
    _reporter = _Reporter()
    threading.Thread(target=_reporter.run, name="heatline-ray-reporter", daemon=True).start()


class _Reporter:
    """A worker's side: find the collector, profile until it says the block ended, report."""

    def __init__(self) -> None:
        self.done: set[str] = set()  # the blocks this worker took part in (their tokens)
        self.pending: tuple[Any, str, dict[str, Any]] | None = None

    def run(self) -> None:
        # Not from the hook itself: an actor call submitted while Ray sets the worker up (or
        # from the process about to become the collector) may bring the worker down.
        while True:
            time.sleep(POLL_S)
            try:
                if self.pending is None:
                    self.look()
                if self.pending is not None:
                    self.serve(*self.pending)
                    self.pending = None
            except Exception:  # noqa: BLE001 -- the collector went away: look again later
                self.pending = None

    def look(self) -> None:
        """Join the block running now, if any, and start profiling."""
        import ray

        if _is_collector():
            return
        # Listed first: a failed get_actor writes a warning to the worker's log each time.
        if {"name": NAME, "namespace": NAMESPACE} not in \
                ray.util.list_named_actors(all_namespaces=True):
            return  # no block running
        try:
            collector = ray.get_actor(NAME, namespace=NAMESPACE)
        except ValueError:  # the block ended meanwhile
            return
        token, keywords, ended = ray.get(collector.session.remote())
        if ended or token in self.done or _is_collector():
            return
        self.done.add(token)
        info = _worker_info()
        try:
            start_with_options(options_from_keywords(keywords), program="Ray worker",
                               announce=False)
        except (HeatlineError, ImportError, OSError) as exc:
            problem = f"heatline could not start: {exc}"
            ray.get(collector.problem.remote(dict(info, problem=problem)))
            return
        info["started_epoch"] = time.time()
        try:
            ray.get(collector.join.remote(info))
        except BaseException:
            stop()  # the block is gone: profile nothing more
            raise
        self.pending = (collector, token, info)

    def serve(self, collector: Any, token: str, info: dict[str, Any]) -> None:
        import ray

        try:
            ray.get(collector.wait_end.remote())
        finally:
            profile = stop().data
        info["actor_id"] = ray.get_runtime_context().get_actor_id()
        ray.get(collector.submit.remote({"info": info, "profile": profile}))


def _worker_info() -> dict[str, Any]:
    import ray

    context = ray.get_runtime_context()
    return {"pid": os.getpid(), "ppid": os.getppid(), "host": socket.gethostname(),
            "node_id": context.get_node_id(), "worker_id": context.get_worker_id(),
            "argv": [str(arg) for arg in sys.argv]}


# --- the collector actor -------------------------------------------------------------------------


# Defined by value, as the hook is: a worker whose Python cannot import heatline still gets
# the class from Ray (its handle would otherwise have no method signatures there, and its
# report of the problem would fail).
_COLLECTOR_SOURCE = '''
class HeatlineCollector:
    """The named actor a block's workers report to. Async: a worker's wait_end call waits
    without holding a thread. Every method a worker calls takes one dict."""

    def __init__(self, token, keywords):
        self.token = token
        self.keywords = keywords
        self.ended = False
        self.event = None
        self.joined = {}
        self.submitted = {}
        self.problems = {}

    def _event(self):
        import asyncio

        if self.event is None:
            self.event = asyncio.Event()
        return self.event

    async def session(self):
        return self.token, self.keywords, self.ended

    async def join(self, info):
        self.joined[info["worker_id"]] = info

    async def problem(self, info):
        self.problems[info["worker_id"]] = info  # info["problem"]: why it is not profiled

    async def wait_end(self):
        await self._event().wait()

    async def end(self):
        self.ended = True
        self._event().set()

    async def counts(self):
        return self.joined, sorted(self.submitted), len(self.problems)

    async def submit(self, report):
        self.submitted[report["info"]["worker_id"]] = (report["info"], report["profile"])

    async def results(self):
        return self.joined, self.submitted, self.problems
'''


def _collector_class() -> Any:
    namespace: dict[str, Any] = {"__name__": "heatline_ray_collector"}
    exec(compile(_COLLECTOR_SOURCE, "<heatline.ray collector>", "exec"), namespace)  # noqa: S102
    return namespace["HeatlineCollector"]


_Collector = _collector_class()


# --- the driver ----------------------------------------------------------------------------------


@contextlib.contextmanager
def profile_workers(path: Any, *, timeout_s: float = GATHER_TIMEOUT_S, min_workers: int = 0,
                    **options: Any) -> Iterator[Profile]:
    """Profile every worker of the connected Ray job (and this driver) during the block, and
    write one merged profile to ``path`` (format from its suffix, as ``-o``). ``options`` are
    heatline's run options as keywords (``cpu_only=True``...). ``timeout_s``: how long the
    block's end waits for the workers' profiles (a worker that died is not waited for where
    this driver can see it; the others missing then are named in a warning). ``min_workers``:
    the block starts once at least this many workers are profiled (or could not be; at most
    30 s, then a warning says how many were), and no other joined for 1.5 s. The ``as``
    target is the merged :class:`heatline.Profile`, complete once the block is left.

    Needs ``ray.init(runtime_env=heatline.ray.runtime_env())`` first (the workers' hook)."""
    import ray

    if not ray.is_initialized():
        raise HeatlineError(
            "heatline.ray.profile_workers needs a Ray connection: call "
            "ray.init(runtime_env=heatline.ray.runtime_env()) first"
        )
    env = ray.get_runtime_context().runtime_env or {}
    if not env.get("worker_process_setup_hook"):
        raise HeatlineError(
            "this Ray job's workers do not start heatline: connect with "
            "ray.init(runtime_env=heatline.ray.runtime_env())"
        )
    if isinstance(min_workers, bool) or not isinstance(min_workers, int) or min_workers < 0:
        raise HeatlineError(f"min_workers must be a whole number >= 0, not {min_workers!r}")
    parsed = options_from_keywords(options)  # the options' errors, here rather than per worker
    if parsed.outfile is not None:
        raise HeatlineError("profile_workers writes to its path argument: no outfile option")
    path = os.path.abspath(os.fspath(path))
    main = getattr(sys.modules.get("__main__"), "__file__", None)
    start_with_options(parsed, program=os.path.abspath(main) if isinstance(main, str) else
                       "<ray driver>")
    started = time.time()
    result = Profile(None)
    collector = None
    try:
        collector, short = _start_collector(ray, options, min_workers)
        yield result
    finally:
        driver = stop()
        ended = time.time()
        if collector is not None:
            merged = _gather(ray, collector, driver.data, started, ended, timeout_s)
            if short:
                merged["warnings"].append(short)
            result._data = merged
            result.save(path)


def _start_collector(ray: Any, keywords: dict[str, Any], min_workers: int) -> tuple[Any, str]:
    """The block's collector, once the workers running now have joined; and a warning when
    fewer than ``min_workers`` had by the time limit ("" when not)."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    here = ray.get_runtime_context().get_node_id()
    actor = ray.remote(_Collector).options(
        name=NAME, namespace=NAMESPACE, num_cpus=0, max_concurrency=100000,
        scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=here, soft=True),
    )
    try:
        collector = actor.remote(uuid.uuid4().hex, dict(keywords))
        ray.get(collector.counts.remote(), timeout=START_LIMIT_S * 4)
    except ValueError as exc:  # the name is taken: another block runs in this cluster
        raise HeatlineError(f"another heatline.ray.profile_workers block is running: {exc}") \
            from None
    # The workers running now find the collector within POLL_S: start once none joined for
    # SETTLE_S (a worker started later joins within POLL_S of its start).
    begin = last_change = time.monotonic()
    seen = -1
    while time.monotonic() - begin < START_LIMIT_S:
        joined, _, problems = ray.get(collector.counts.remote())
        if len(joined) + problems != seen:
            seen, last_change = len(joined) + problems, time.monotonic()
        elif time.monotonic() - last_change >= SETTLE_S and seen >= min_workers:
            break
        time.sleep(POLL_S / 2)
    short = ""
    if seen < min_workers:
        short = (f"only {seen} of the {min_workers} Ray workers asked for (min_workers) had "
                 f"joined when the block started, {START_LIMIT_S:g} s after it was entered")
    return collector, short


def _gather(ray: Any, collector: Any, driver: Any, started: float, ended: float,
            timeout_s: float) -> Any:
    ray.get(collector.end.remote())
    here = ray.get_runtime_context().get_node_id()
    deadline = time.monotonic() + timeout_s
    while True:
        joined, submitted, _ = ray.get(collector.counts.remote())
        waiting = [wid for wid in joined if wid not in submitted]
        if not waiting or time.monotonic() >= deadline:
            break
        if all(not _alive(joined[wid], here) for wid in waiting):
            break
        time.sleep(0.2)
    joined_info, submitted_info, problems = ray.get(collector.results.remote())
    ray.kill(collector)
    events = _task_events(ray, started, ended)
    warnings = []
    workers = []
    for wid, (info, profile) in sorted(submitted_info.items(), key=lambda i: i[1][0]["pid"]):
        role = "Ray worker"
        if info.get("actor_id"):
            names = [name for name, _, worker in events["all"] if worker == wid]
            classes = [name.split(".")[0] for name in names if "." in name]
            role = f"Ray actor {classes[0]}" if classes else "Ray actor"
        workers.append(({"pid": info["pid"], "ppid": info["ppid"], "role": role,
                         "argv": info["argv"], "exit": "running",
                         "offset_s": max(0.0, info["started_epoch"] - started)}, profile))
    for wid, info in sorted(joined_info.items(), key=lambda i: i[1]["pid"]):
        if wid not in submitted_info:
            state = "died" if not _alive(info, here) else f"sent none within {timeout_s:g} s"
            warnings.append(f"Ray worker {info['pid']} on {info['host']} {state}: its work "
                            "is missing from this profile")
    for _, info in sorted(problems.items(), key=lambda i: i[1]["pid"]):
        warnings.append(f"Ray worker {info['pid']} on {info['host']} was not profiled: "
                        f"{info['problem']}")
    if workers and not events["all"]:
        warnings.append("Ray recorded no task events in the block (ray.timeline() is empty: "
                        "task events turned off with RAY_task_events_report_interval_ms=0?): "
                        "the tasks table is empty")
    main_info = {"pid": os.getpid(), "ppid": os.getppid(), "role": "Ray driver",
                 "argv": [str(arg) for arg in sys.argv], "exit": "running", "offset_s": 0.0}
    merged = merge_processes((main_info, driver), workers)
    merged["warnings"].extend(warnings)
    spans = [(name, wall) for name, wall, _ in events["window"]]
    merged["tasks"] = tasks_table(spans, [profile for _, profile in workers])
    return merged


def _alive(info: dict[str, Any], here: str) -> bool:
    """Whether a worker process still runs, as far as this driver can tell: one on this
    node is looked up by pid; one elsewhere counts as alive (the timeout bounds the wait)."""
    if info.get("node_id") != here:
        return True
    try:
        with open(f"/proc/{info['pid']}/stat", encoding="utf-8", errors="replace") as stat:
            state = stat.read().rpartition(")")[2].split()[0]
    except FileNotFoundError:  # ended and reaped
        return False
    except (OSError, IndexError):
        return True
    return state not in ("Z", "X")  # a zombie has ended: its parent has not reaped it yet


def _task_events(ray: Any, started: float, ended: float) -> dict[str, list[Any]]:
    """Ray's record of the tasks run: ``all`` (name, wall s, worker id) of every task it
    kept, ``window`` those that started in the block. ray.timeline() gives each task's
    execution as an event ``task::NAME`` (``task::ACTOR:Class.method`` for a named actor) on its
    worker's row, in microseconds since the epoch;
    heatline's own collector's calls are left out."""
    import logging

    logger = logging.getLogger("ray._private.state")
    level = logger.level
    logger.setLevel(logging.ERROR)  # its notice about reading from the dashboard one day
    try:
        events = ray.timeline()
    finally:
        logger.setLevel(level)
    found: dict[str, list[Any]] = {"all": [], "window": []}
    for event in events or []:
        category = str(event.get("cat", ""))
        tid = str(event.get("tid", ""))
        if not category.startswith("task::") or not tid.startswith("worker:"):
            continue
        # A named actor's calls are "NAME:Class.method": kept by class and method.
        name = category[len("task::"):].rpartition(":")[2]
        if name.startswith(_Collector.__name__ + "."):
            continue
        item = (name, float(event.get("dur", 0.0)) / 1e6, tid[len("worker:"):])
        found["all"].append(item)
        if started * 1e6 <= float(event.get("ts", 0.0)) <= ended * 1e6:
            found["window"].append(item)
    return found
