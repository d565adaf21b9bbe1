"""heatline.dask.profile_workers on a real Dask cluster: a scheduler and workers started by
`dask scheduler` / `dask worker` as processes of their own (not children of the client), on
two test hosts (_hosts.py: network namespaces, or loopback where they cannot be made). Host 0
runs the scheduler, worker "a" and the client; host 1 runs worker "b", worker "doomed" (killed
during the block), worker "broken" (its Python finds a heatline that cannot be imported) and
worker "late" (started once the block is entered)."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from _hosts import make_hosts
from _tools import require_module

from heatline.data.queries import process_keys

TARGETS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "targets")
HANG_GUARD_S = 900  # only against a hang: start-up on a loaded machine is slow


def _dask(*args):
    return [sys.executable, "-m", "distributed.cli.dask_" + args[0], *args[1:]]


def _wait_for(condition, what, processes):
    deadline = time.monotonic() + HANG_GUARD_S
    while not condition():
        for name, process in processes.items():
            if process.poll() is not None:
                pytest.fail(f"{name} exited ({process.returncode}) while waiting for {what}")
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.2)


def _start(processes, name, argv, log_dir, **env):
    log = open(os.path.join(log_dir, f"{name}.log"), "wb")
    processes[name] = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                       env=dict(os.environ, **env), start_new_session=True)
    log.close()


def _stop_all(processes):
    for process in processes.values():
        if process.poll() is None:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    for process in processes.values():
        process.wait(timeout=60)


def _logs(log_dir):
    parts = []
    for name in sorted(os.listdir(log_dir)):
        with open(os.path.join(log_dir, name), errors="replace") as f:
            parts.append(f"--- {name}\n{f.read()[-3000:]}")
    return "\n".join(parts)


def _line_time(profile, function):
    """Time on a CPU (python + native) on the lines of ``function`` of the client program,
    summed over the merged processes."""
    total = 0.0
    for path, entry in profile["files"].items():
        if os.path.basename(path) != "dask_workers_client.py":
            continue
        for line in entry["lines"]:
            if line.get("function") == function:
                total += line["python_s"] + line["native_s"]
    return total


def _by_process(profile, function):
    """For a failure's message: each process's role, address, and python, native, system and
    cpu_wait seconds on ``function``'s lines, from its own profile."""
    rows = []
    for key, process in zip(process_keys(profile["processes"]), profile["processes"]):
        own = profile["process_profiles"].get(key) or {}
        kinds = [0.0, 0.0, 0.0, 0.0]
        for path, entry in (own.get("files") or {}).items():
            if os.path.basename(path) == "dask_workers_client.py":
                for line in entry["lines"]:
                    if line.get("function") == function:
                        for i, kind in enumerate(("python_s", "native_s", "system_s",
                                                  "cpu_wait_s")):
                            kinds[i] += line.get(kind, 0.0)
        rows.append((process["role"], process.get("address"), process["pid"], kinds))
    return rows


def test_profile_workers_on_two_hosts(tmp_path):
    require_module("distributed", "dask")
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    state = tmp_path / "state"
    state.mkdir()
    scheduler_file = str(tmp_path / "scheduler.json")
    out = str(tmp_path / "job.json")
    broken = tmp_path / "broken" / "heatline"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text("raise ImportError('this heatline is broken on purpose')\n")
    processes = {}
    with make_hosts(2) as hosts:
        print(hosts.describe())
        host0, host1 = hosts
        try:
            # the tasks' _truth, imported by reference (the scheduler reads the graph too)
            targets = {"PYTHONPATH": TARGETS}
            worker = ["--scheduler-file", scheduler_file, "--nthreads", "1", "--no-dashboard"]
            _start(processes, "scheduler", host0.command(_dask(
                "scheduler", "--host", host0.address, "--port", "0", "--no-dashboard",
                "--scheduler-file", scheduler_file)), log_dir, **targets)
            _wait_for(lambda: os.path.exists(scheduler_file), "the scheduler", processes)
            _start(processes, "worker-a", host0.command(_dask(
                "worker", *worker, "--host", host0.address, "--name", "a")), log_dir, **targets)
            _start(processes, "worker-b", host1.command(_dask(
                "worker", *worker, "--host", host1.address, "--name", "b")), log_dir, **targets)
            _start(processes, "worker-doomed", host1.command(_dask(
                "worker", *worker, "--host", host1.address, "--name", "doomed",
                "--no-nanny")), log_dir, **targets)
            _start(processes, "worker-broken", host1.command(_dask(
                "worker", *worker, "--host", host1.address, "--name", "broken",
                "--no-nanny")), log_dir,
                   PYTHONPATH=os.pathsep.join([str(broken.parent), TARGETS]))
            _start(processes, "client", host0.command(
                [sys.executable, os.path.join(TARGETS, "dask_workers_client.py"),
                 scheduler_file, out, str(state)]), log_dir)
            _wait_for((state / "entered").exists, "the block", processes)
            _start(processes, "worker-late", host1.command(_dask(
                "worker", *worker, "--host", host1.address, "--name", "late")), log_dir,
                **targets)
            ready_path = state / "ready.json"
            _wait_for(ready_path.exists, "the client's tasks", processes)
            ready = json.loads(ready_path.read_text())
            os.kill(processes["worker-doomed"].pid, signal.SIGKILL)
            deadline = time.monotonic() + HANG_GUARD_S
            client = processes["client"]
            while client.poll() is None and time.monotonic() < deadline:
                time.sleep(0.2)
            assert client.returncode == 0, _logs(log_dir)
        finally:
            _stop_all(processes)
    with open(out) as f:
        profile = json.load(f)

    workers = [p for p in profile["processes"] if p["role"] == "Dask worker"]
    addresses = {p["address"] for p in workers}
    names = ready["addresses"]
    assert addresses == {names["a"], names["b"], names["late"]}, profile["processes"]
    assert set(ready["workers"]) <= addresses
    late = next(p for p in workers if p["address"] == names["late"])
    assert late["start_s"] > 0  # its engine started during the block, as it joined
    if hosts.kind == "netns":
        assert {a.split("://")[1].rsplit(":", 1)[0] for a in addresses} == {
            host0.address, host1.address}

    # each task function's lines carry the time on a CPU its tasks measured on their own
    # thread's clock (the task clock: steal time included, as heatline counts it)
    for function in ("spin_a", "spin_b"):
        measured = sum(task["on_cpu_s"] for task in ready[function])
        charged = _line_time(profile, function)
        assert charged == pytest.approx(measured, rel=0.2), (
            function, charged, measured, ready[function], _by_process(profile, function))

    tasks = {row["name"]: row for row in profile["tasks"]}
    assert set(tasks) == {"spin_a", "spin_b", "allocate"}
    assert tasks["spin_a"]["count"] == len(ready["spin_a"])
    assert tasks["spin_b"]["count"] == len(ready["spin_b"])
    for prefix in ("spin_a", "spin_b"):
        row = tasks[prefix]
        on_cpu = sum(task["on_cpu_s"] for task in ready[prefix])
        assert row["python_s"] + row["native_s"] == pytest.approx(on_cpu, rel=0.2), row
        assert row["wall_s"] >= sum(task["wall_s"] for task in ready[prefix]), row
        assert os.path.basename(row["lines"][0]["file"]) == "dask_workers_client.py", row

    # a function the workers import by reference: what it allocated is its prefix's memory
    allocate = tasks["allocate"]
    assert allocate["count"] == len(ready["allocate"])
    assert allocate["alloc_bytes"] == pytest.approx(sum(ready["allocate"]), rel=0.25), allocate
    assert os.path.basename(allocate["lines"][0]["file"]) == "dask_tasks.py", allocate

    warnings = "\n".join(profile["warnings"])
    doomed, broken_address = ready["addresses"]["doomed"], ready["addresses"]["broken"]
    assert f"Dask worker {doomed}" in warnings and "left or died" in warnings, warnings
    assert f"Dask worker {broken_address}" in warnings and "broken on purpose" in warnings, \
        warnings


def test_profile_workers_without_a_client():
    require_module("distributed", "dask")
    result = subprocess.run(
        [sys.executable, "-c",
         "import heatline\n"
         "try:\n"
         "    with heatline.dask.profile_workers('job.json'): pass\n"
         "except heatline.HeatlineError as e:\n"
         "    print('error:', e)\n"],
        capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 1 and "no Dask client is connected" in lines[0], result.stdout
