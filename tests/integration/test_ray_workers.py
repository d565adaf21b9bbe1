"""heatline.ray.profile_workers on a real local Ray cluster (docs/integrations.md, "Ray").

The cluster is started by `ray start --head` as a process of its own, so its workers are not
children of the driver the tests run: only Ray's worker set-up hook reaches them. Ground
truth: each task measures its own thread's CPU time (tests/targets/ray_tasks.py); the merged
profile's lines of each task function must carry that time within 20%, and Ray's own count of
each task's runs. The cluster's processes are killed at the end, pass or fail: those whose
command line names the cluster's own temporary directory, and every process below them (not
`ray stop --force`, which ends every Ray process of the machine)."""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import pytest

from _tools import require_module
from heatline.data import io, model

TARGET = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "targets",
                      "ray_tasks.py")
# Hang guards only: Ray starts slowly on a loaded two-core machine.
START_TIMEOUT_S = 300
RUN_TIMEOUT_S = 600
# The counts the target runs in its profiled block.
COUNTS = {"spin_a": 6, "spin_b": 4, "Counter.add": 3}


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _children():
    """{pid: [child pids]} of every process /proc shows."""
    tree = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8", errors="replace") as stat:
                ppid = int(stat.read().rpartition(")")[2].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        tree.setdefault(ppid, []).append(int(entry))
    return tree


def _cluster_pids(marker):
    """The cluster's processes: those whose command line names ``marker`` (its temporary
    directory: gcs_server, raylet, the monitors), and all their descendants (the workers)."""
    roots = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                if marker.encode() in cmdline.read():
                    roots.append(int(entry))
        except OSError:
            continue
    tree, found, todo = _children(), set(), list(roots)
    while todo:
        pid = todo.pop()
        if pid not in found:
            found.add(pid)
            todo.extend(tree.get(pid, []))
    return found


def _kill_cluster(marker):
    """End the cluster's processes by pid (`ray stop` would end every Ray process of the
    machine, other clusters' too): SIGTERM, then SIGKILL for the stragglers."""
    for sig in (signal.SIGTERM, signal.SIGKILL, signal.SIGKILL):
        for pid in _cluster_pids(marker):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        time.sleep(1.0)
    return _cluster_pids(marker)


@pytest.fixture(scope="module")
def ray_cluster():
    require_module("ray", "ray")
    ray_bin = os.path.join(os.path.dirname(sys.executable), "ray")
    # Short: Ray's Unix sockets live under it, and their paths are limited to 107 bytes.
    temp = tempfile.mkdtemp(prefix="hlray", dir="/tmp")
    port = _free_port()
    address = f"127.0.0.1:{port}"
    env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0")
    try:
        started = subprocess.run(
            [ray_bin, "start", "--head", f"--port={port}", "--num-cpus=2",
             "--include-dashboard=false", f"--temp-dir={temp}", "--disable-usage-stats"],
            capture_output=True, text=True, timeout=START_TIMEOUT_S, env=env,
            start_new_session=True, check=False)
        assert started.returncode == 0, started.stdout + started.stderr
        yield address, env
    finally:
        left = _kill_cluster(temp)
        shutil.rmtree(temp, ignore_errors=True)
        assert not left, f"Ray processes still running: {sorted(left)}"


@pytest.fixture(scope="module")
def job(ray_cluster, tmp_path_factory):
    """The target's run: (merged profile, ground truth)."""
    address, env = ray_cluster
    out = tmp_path_factory.mktemp("ray")
    profile_path, truth_path = out / "job.json", out / "truth.json"
    # A heatline package that cannot be imported, first on one actor's PYTHONPATH.
    broken = out / "broken" / "heatline"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text("raise ImportError('this heatline cannot load')\n")
    result = subprocess.run([sys.executable, TARGET, address, str(profile_path),
                             str(truth_path)], capture_output=True, text=True,
                            timeout=RUN_TIMEOUT_S, check=False,
                            env=dict(env, RAY_TASKS_NO_HEATLINE=str(broken.parent)))
    assert result.returncode == 0, result.stdout + result.stderr
    profile = io.load(str(profile_path))
    with open(truth_path, encoding="utf-8") as file:
        truth = json.load(file)
    return profile, truth


def test_the_merged_profile_matches_the_model(job):
    profile, _ = job
    assert model.mismatches(profile) == []


def test_each_worker_is_a_process_of_the_profile_by_its_ray_role(job):
    profile, truth = job
    roles = {process["pid"]: process["role"] for process in profile["processes"]}
    assert roles[truth["driver"]] == "Ray driver"
    task_pids = {pid for name in ("spin_a", "spin_b") for pid, _ in truth["tasks"][name]}
    actor_pids = {pid for pid, _ in truth["tasks"]["Counter.add"]}
    assert task_pids and all(roles.get(pid) == "Ray worker" for pid in task_pids), roles
    assert len(actor_pids) == 1 and roles.get(actor_pids.pop()) == "Ray actor Counter", roles
    assert set(profile["process_profiles"]) == {str(pid) for pid in roles}


def _function_cpu(profile, qualname):
    functions = [function for path, entry in profile["files"].items()
                 if path.endswith("ray_tasks.py") for function in entry["functions"]
                 if function["qualname"] == qualname]
    assert len(functions) == 1, qualname
    return sum(functions[0][key] for key in ("python_s", "native_s", "system_s"))


@pytest.mark.parametrize("name", list(COUNTS))
def test_each_task_functions_lines_carry_the_cpu_time_its_tasks_measured(job, name):
    profile, truth = job
    measured = sum(seconds for _, seconds in truth["tasks"][name])
    sampled = _function_cpu(profile, name)
    assert abs(sampled - measured) <= 0.2 * measured, (name, sampled, measured)


def test_the_tasks_table_names_each_task_with_rays_count_and_its_time(job):
    profile, truth = job
    tasks = {task["name"]: task for task in profile["tasks"]}
    assert {name: tasks[name]["count"] for name in COUNTS if name in tasks} == COUNTS
    assert not any("_Collector" in name for name in tasks)  # heatline's own actor
    for name in COUNTS:
        task = tasks[name]
        measured = sum(seconds for _, seconds in truth["tasks"][name])
        split = task["python_s"] + task["native_s"] + task["system_s"]
        assert abs(split - measured) <= 0.2 * measured, (name, split, measured)
        # Wall time from Ray's record covers at least the CPU time the runs measured.
        assert task["wall_s"] >= measured * 0.99, (name, task["wall_s"], measured)
        # Its hottest lines are its own function's, in the target.
        assert task["lines"] and task["lines"][0]["file"].endswith("ray_tasks.py")


def test_profile_workers_without_a_ray_connection_is_one_clear_error(tmp_path):
    require_module("ray", "ray")
    program = ("import heatline\n"
               "with heatline.ray.profile_workers('job.json'):\n"
               "    pass\n")
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                            cwd=tmp_path, timeout=RUN_TIMEOUT_S, check=False)
    assert result.returncode != 0
    last = result.stderr.strip().splitlines()[-1]
    assert last == ("heatline.api.HeatlineError: heatline.ray.profile_workers needs a Ray "
                    "connection: call ray.init(runtime_env=heatline.ray.runtime_env()) first")
    assert not (tmp_path / "job.json").exists()


def test_importing_heatline_does_not_import_ray():
    program = "import sys, heatline; heatline.ray; print('ray' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                            timeout=RUN_TIMEOUT_S, check=False)
    assert result.stdout.strip() == "False", result.stderr


def test_a_worker_that_cannot_load_heatline_is_named_in_a_warning(job):
    profile, truth = job
    pid = truth["unprofiled"]
    assert pid is not None
    named = [warning for warning in profile["warnings"] if f"Ray worker {pid} " in warning]
    assert len(named) == 1, profile["warnings"]
    assert "heatline cannot be imported" in named[0] and "this heatline cannot load" in named[0]
    assert pid not in {process["pid"] for process in profile["processes"]}


def test_a_worker_that_dies_in_the_block_is_a_warning_not_a_failure(job):
    profile, truth = job
    pid = truth["died"]
    named = [warning for warning in profile["warnings"] if f"Ray worker {pid} " in warning]
    assert len(named) == 1, profile["warnings"]
    assert " died: its work is missing" in named[0]
    assert pid not in {process["pid"] for process in profile["processes"]}


def test_a_job_connected_without_heatlines_hook_is_one_clear_error(ray_cluster, tmp_path):
    address, env = ray_cluster
    program = ("import sys, ray, heatline\n"
               "ray.init(address=sys.argv[1], log_to_driver=False)\n"
               "try:\n"
               "    with heatline.ray.profile_workers('job.json'):\n"
               "        pass\n"
               "except heatline.HeatlineError as exc:\n"
               "    print(exc)\n"
               "print(heatline.is_running())\n")
    result = subprocess.run([sys.executable, "-c", program, address], capture_output=True,
                            text=True, cwd=tmp_path, timeout=RUN_TIMEOUT_S, env=env,
                            check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "this Ray job's workers do not start heatline: connect with "
        "ray.init(runtime_env=heatline.ray.runtime_env())",
        "False"]
    assert not (tmp_path / "job.json").exists()


def test_runtime_env_adds_the_hook_and_refuses_a_hook_of_its_own():
    import heatline
    from heatline import HeatlineError

    env = heatline.ray.runtime_env({"env_vars": {"A": "1"}})
    assert env["env_vars"] == {"A": "1"} and callable(env["worker_process_setup_hook"])
    assert heatline.ray.runtime_env(env) == env  # heatline's own hook again: unchanged
    with pytest.raises(HeatlineError, match=r"call heatline\.ray\.worker_setup\(\) from it"):
        heatline.ray.runtime_env({"worker_process_setup_hook": "mypkg.setup"})
