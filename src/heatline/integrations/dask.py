"""``heatline.dask.profile_workers``: every worker of a Dask cluster profiled while a block
runs, the profiles gathered over Dask's own connections and merged into one
(docs/integrations.md, "Dask").

Dask's documented extension points only: a worker plugin (``Client.register_plugin``) starts
heatline's engine in each worker, those that join later included, and records each task the
worker runs (its ``transition`` hook); ``Client.run`` gathers each worker's profile at the end
(built on the worker: native symbols are named there); each worker reports its start or its
failure to start as a scheduler event (``Worker.log_event``, read back with
``Client.get_events``), so that workers that left or could not load heatline are named.

The plugin's class and the gathering function are made inside functions, so that cloudpickle
sends them by value: a worker whose Python cannot import heatline still unpickles them, and
says why it cannot profile instead of failing the registration. dask and distributed are
imported only when a block starts.
"""

from __future__ import annotations

import os
import socket
import sys
import time
import uuid
from typing import Any

from heatline.api import HeatlineError

PLUGIN_NAME = "heatline-profile-workers"
TOPIC = "heatline"
ROLE = "Dask worker"
CLIENT_ROLE = "Dask client"


def profile_workers(outfile: Any, client: Any = None, *, profile_client: bool = True,
                    pause_dask_profiler: bool = True, **options: Any) -> ProfileWorkers:
    """``with heatline.dask.profile_workers("job.json"):`` profiles every worker of the
    current Dask client (``client=``: that one) while the block runs, and writes one merged
    profile to ``outfile`` (format from its suffix, as ``-o``): each worker a process (role
    "Dask worker", its address), and ``tasks``, the work by task prefix. ``options`` are
    heatline's run options as keywords (as :func:`heatline.start`'s), applied in each worker.
    ``profile_client``: the client process is profiled too (role "Dask client") unless it is
    profiled already. ``pause_dask_profiler``: Dask's own sampler
    (``distributed.worker.profile``) is paused in each worker for the block (its thread takes
    the GIL every 10 ms to read every thread's stack: a cost to the tasks, and on a busy
    machine more time charged to their lines as running). The context manager's ``profile``
    is the merged :class:`heatline.Profile` once the block is left. Raises HeatlineError
    when no client is connected."""
    from heatline.api import options_from_keywords

    if "outfile" in options or "output" in options:
        raise HeatlineError("profile_workers writes its own outfile: give it as the first "
                            "argument")
    options_from_keywords(options)  # checked here, so that a bad one fails in the client
    options = dict(options, _pause_dask_profiler=bool(pause_dask_profiler))
    return ProfileWorkers(os.path.abspath(os.fspath(outfile)), client, profile_client, options)


def _client_sources() -> dict[str, list[str]]:
    """The client's main script's lines by its path, then those of the notebook cells it ran
    (IPython and Jupyter keep them in linecache, with no file on disk), the latest first:
    where the functions cloudpickle sends by value (those of ``__main__``) are found on the
    workers, which may not have the files."""
    import linecache

    sources: dict[str, list[str]] = {}
    main_file = getattr(sys.modules.get("__main__"), "__file__", None)
    if isinstance(main_file, str):
        path = os.path.abspath(main_file)
        lines = linecache.getlines(path)
        if lines:
            sources[path] = list(lines)
    cells = [(path, entry[2]) for path, entry in list(linecache.cache.items())
             if len(entry) == 4 and entry[1] is None and not path.startswith("<")]
    for path, lines in reversed(cells):
        sources.setdefault(path, list(lines))
    return sources


class ProfileWorkers:
    """What :func:`profile_workers` returns: a context manager."""

    def __init__(self, outfile: str, client: Any, profile_client: bool,
                 options: dict[str, Any]) -> None:
        self.outfile = outfile
        self.client = client
        self.profile_client = profile_client
        self.options = options
        self.profile: Any = None  # heatline.Profile, once the block is left
        self._token = ""
        self._client_started = False
        self._started_wall = 0.0

    def __enter__(self) -> ProfileWorkers:
        self.client = _connected_client(self.client)
        self._token = uuid.uuid4().hex
        self._started_wall = time.time()
        if self.profile_client:
            from heatline import api

            try:
                api.start(**_heatline_options(self.options))
                self._client_started = True
            except HeatlineError:
                self._client_started = False  # profiled already (heatline script.py): skip
        plugin = _plugin_class()(self.options, self._token, _client_sources())
        try:
            self.client.register_plugin(plugin, name=PLUGIN_NAME)
        except Exception as exc:  # noqa: BLE001 -- Dask's own errors, said in one line
            self._stop_client()
            raise HeatlineError(f"could not register heatline's worker plugin: {exc}") from None
        return self

    def __exit__(self, *exc_info: Any) -> None:
        client_profile = self._stop_client()
        warnings: list[str] = []
        try:
            answers = self.client.run(_collect_function(PLUGIN_NAME), on_error="return")
        except Exception as exc:  # noqa: BLE001 -- the scheduler went away
            answers = {}
            warnings.append(f"the workers' profiles could not be gathered: {exc}")
        events = _events(self.client, self._token)
        try:
            self.client.unregister_worker_plugin(PLUGIN_NAME)
        except Exception:  # noqa: BLE001,S110 -- a plugin already gone: nothing to undo
            pass
        try:
            merged = _merge(client_profile, self._started_wall, answers, events, warnings)
        except HeatlineError:
            if exc_info[0] is not None:
                return  # the block's own exception says more than "no profile"
            raise
        from heatline.api import Profile

        self.profile = Profile(merged)
        self.profile.save(self.outfile)

    def _stop_client(self) -> Any:
        if not self._client_started:
            return None
        self._client_started = False
        from heatline import api

        return api.stop().data


def _heatline_options(options: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in options.items() if not key.startswith("_")}


def _connected_client(client: Any) -> Any:
    if client is None:
        try:
            from distributed import get_client
        except ImportError:
            raise HeatlineError("heatline.dask.profile_workers needs Dask's distributed: "
                                "pip install 'heatline[dask]'") from None
        try:
            client = get_client()
        except ValueError:
            client = None
    if client is None or getattr(client, "status", "running") not in ("running", "connecting"):
        raise HeatlineError("heatline.dask.profile_workers: no Dask client is connected; "
                            "create one first (distributed.Client(scheduler_address)) or pass "
                            "client=")
    return client


def _events(client: Any, token: str) -> list[dict[str, Any]]:
    try:
        events = client.get_events(TOPIC)
    except Exception:  # noqa: BLE001 -- no events to tell: no names in the warnings
        return []
    return [message for _, message in events
            if isinstance(message, dict) and message.get("token") == token]


def _merge(client_profile: Any, started_wall: float, answers: dict[str, Any],
           events: list[dict[str, Any]], warnings: list[str]) -> Any:
    """The merged profile from the client's own (or None) and the workers' answers."""
    from heatline.data.merge import merge_processes
    from heatline.data.tasks import summed

    workers = []
    answered = set()
    for address, answer in sorted(answers.items()):
        if isinstance(answer, BaseException):
            warnings.append(f"Dask worker {address} gave no profile: "
                            f"{type(answer).__name__}: {answer}")
            answered.add(address)
        elif isinstance(answer, dict):
            workers.append(answer)
            answered.add(address)
    for event in events:
        address = event.get("address", "?")
        if event.get("event") == "failed" and address not in {w["address"] for w in workers}:
            warnings.append(f"Dask worker {address} (pid {event.get('pid')} on "
                            f"{event.get('host')}) was not profiled: heatline could not start "
                            f"there: {event.get('error')}")
            answered.add(address)
    left = {}
    for event in events:
        if event.get("event") == "started" and event.get("address") not in answered:
            left[event["address"]] = event
    for address, event in sorted(left.items()):
        warnings.append(f"Dask worker {address} (pid {event.get('pid')} on {event.get('host')}) "
                        "left or died during the block: its work is missing")
    workers.sort(key=lambda answer: (answer["started_wall"], answer["address"]))
    if client_profile is None and not workers:
        raise HeatlineError("heatline.dask.profile_workers: no worker gave a profile"
                            + (f" ({'; '.join(warnings)})" if warnings else ""))
    base = started_wall if client_profile is not None else workers[0]["started_wall"]
    children = [(_info(answer, base), answer["profile"]) for answer in workers]
    if client_profile is not None:
        main = ({"pid": os.getpid(), "ppid": os.getppid(), "role": CLIENT_ROLE,
                 "argv": list(sys.argv), "exit": "running", "offset_s": 0.0,
                 "host": socket.gethostname()}, client_profile)
    else:
        main, children = children[0], children[1:]
    merged = merge_processes(main, children)
    merged["tasks"] = summed([answer["tasks"] for answer in workers])
    merged["warnings"].extend(warnings)
    return merged


def _info(answer: dict[str, Any], base: float) -> dict[str, Any]:
    return {"pid": answer["pid"], "ppid": answer["ppid"], "role": ROLE, "argv": answer["argv"],
            "exit": "running", "offset_s": answer["started_wall"] - base,
            "host": answer["host"], "address": answer["address"]}


# --- the workers' side ---------------------------------------------------------------------


class WorkerSide:
    """heatline in one worker: the profile and the tasks recorded while it runs."""

    def __init__(self, worker: Any, options: dict[str, Any],
                 sources: dict[str, list[str]]) -> None:
        self.worker = worker
        self.options = options
        self.sources = sources
        self.records: list[dict[str, Any]] = []
        self.warnings: list[str] = []
        self.started_wall = 0.0
        self.running = False
        self.paused_profiler: Any = None  # Dask's own sampler, paused for the block

    def start(self) -> None:
        from heatline import api

        self.started_wall = time.time()
        api.start(**_heatline_options(self.options))
        self.running = True
        sampler = self.worker.periodic_callbacks.get("profile")
        if self.options.get("_pause_dask_profiler") and sampler is not None \
                and sampler.is_running():
            sampler.stop()
            self.paused_profiler = sampler
        if self.sources:
            import linecache

            for path, lines in self.sources.items():  # the client's source, as it sent it
                linecache.cache[path] = (sum(map(len, lines)), None, lines, path)
            run = api.current_run()
            if run is not None and run.session.snapshot_filter is None:
                run.session.snapshot_filter = self._charge_dynamic_code

    def _charge_dynamic_code(self, snapshot: dict[str, Any]) -> dict[str, Any]:
        """The time of the client's functions sent by value (cloudpickle names their file
        ``<dynamic-code>``) charged to the client's source lines (data/build.py)."""
        from heatline.data.build import charge_dynamic_code, read_source_lines

        _own_code_not_user(snapshot)
        self.warnings += charge_dynamic_code(snapshot, list(self.sources), read_source_lines)
        return snapshot

    def transition(self, key: Any, start: str, finish: str) -> None:
        if start != "executing" or finish not in ("memory", "error"):
            return
        ts = self.worker.state.tasks.get(key)
        if ts is None:
            return
        computes = [span for span in ts.startstops if span.get("action") == "compute"]
        if not computes:
            return
        from heatline.data.tasks import task_record

        span = computes[-1]
        self.records.append(task_record(ts.prefix, max(0.0, span["stop"] - span["start"]),
                                        _task_code(ts.run_spec)))

    def collect(self) -> dict[str, Any]:
        from heatline import api
        from heatline.data.tasks import worker_tasks

        self.running = False
        self._resume_dask_profiler()
        profile = api.stop().data
        profile["warnings"] += self.warnings
        address = self.worker.address
        return {"address": address, "pid": os.getpid(), "ppid": os.getppid(),
                "host": socket.gethostname(), "argv": list(sys.argv),
                "started_wall": self.started_wall, "profile": profile,
                "tasks": worker_tasks(profile, self.records)}

    def _resume_dask_profiler(self) -> None:
        if self.paused_profiler is not None:
            self.paused_profiler.start()
            self.paused_profiler = None

    def discard(self) -> None:
        self._resume_dask_profiler()
        if self.running:
            from heatline import api

            self.running = False
            if api.is_running():
                api.stop()


# The qualnames of this module's code that cloudpickle sends by value (the plugin's methods,
# the gathering function): rebuilt on the worker in <dynamic-code>, and heatline's own.
_SENT_BY_VALUE = ("_plugin_class.<locals>.", "_collect_function.<locals>.")


def _own_code_not_user(snapshot: dict[str, Any]) -> None:
    """This module's code sent by value (its file is <dynamic-code> on the worker) given back
    its file, as code that is not the user's: heatline's start and stop in the plugin are no
    line of the program's (changes ``snapshot``: docs/engine-api.md's files and functions)."""
    files, functions = snapshot["files"], snapshot["functions"]
    own = None
    for function in functions:
        if (files[function["file"]]["path"] == "<dynamic-code>"
                and function["qualname"].startswith(_SENT_BY_VALUE)):
            if own is None:
                own = len(files)
                files.append({"path": os.path.abspath(__file__), "user": False})
            function["file"] = own


def _task_code(run_spec: Any) -> Any:
    """The code object of the function a task runs, or None."""
    function = getattr(run_spec, "func", None)
    for _ in range(8):  # functools.partial, decorators' __wrapped__, callable objects
        if function is None:
            return None
        code = getattr(function, "__code__", None)
        if code is not None:
            return code
        inner = getattr(function, "func", None) or getattr(function, "__wrapped__", None)
        if inner is None and not isinstance(function, type):
            inner = getattr(type(function), "__call__", None)
            if inner is not None and getattr(inner, "__code__", None) is None:
                inner = None
        function = inner
    return None


def _plugin_class() -> type:
    """The worker plugin's class, made here so that cloudpickle sends it by value (a worker
    without heatline unpickles it and reports why it cannot profile)."""
    from distributed import WorkerPlugin

    class HeatlineWorkerPlugin(WorkerPlugin):
        def __init__(self, options: dict[str, Any], token: str,
                     sources: dict[str, list[str]]) -> None:
            self.options = options
            self.token = token
            self.sources = sources
            self.side: Any = None

        def setup(self, worker: Any) -> None:
            import os
            import socket

            event = {"token": self.token, "address": worker.address, "pid": os.getpid(),
                     "host": socket.gethostname()}
            try:
                from heatline.integrations.dask import WorkerSide

                side = WorkerSide(worker, self.options, self.sources)
                side.start()
                self.side = side
                event["event"] = "started"
            except BaseException as exc:  # noqa: BLE001 -- said in the merged profile
                event.update(event="failed", error=f"{type(exc).__name__}: {exc}")
            worker.log_event("heatline", event)

        def transition(self, key: Any, start: str, finish: str, *args: Any,
                       **kwargs: Any) -> None:
            if self.side is not None:
                self.side.transition(key, start, finish)

        def teardown(self, worker: Any) -> None:
            if self.side is not None:
                self.side.discard()
                self.side = None

    return HeatlineWorkerPlugin


def _collect_function(name: str) -> Any:
    """The function Client.run runs in each worker: its profile and tasks, or None where
    heatline does not run (made here to be sent by value, as the plugin's class)."""

    def heatline_collect(dask_worker: Any) -> Any:
        plugin = dask_worker.plugins.get(name)
        side = getattr(plugin, "side", None)
        if side is None or not side.running:
            return None
        return side.collect()

    return heatline_collect
