"""What profiling costs a Ray worker: heatline.ray.profile_workers beside `py-spy record`
attached to the workers (what Ray's dashboard runs for its CPU flame graphs).

    python bench/ray_overhead.py [--tasks 24] [--loops 400000] [--out results.json]

A local cluster (`ray start --head --num-cpus=2`, its own temporary directory) runs one job
per mode, each with two fresh workers: --tasks tasks of a pure-Python loop of --loops
iterations, each measuring its own wall time (perf_counter around the loop) and its thread's
CPU time. Modes: plain (a job without heatline's hook), heatline (the job connected with
heatline.ray.runtime_env(), the tasks inside profile_workers with its defaults), py-spy (a
plain job whose two workers each have `py-spy record --pid PID --rate 100` attached for the
tasks, py-spy's default: it stops the process for each sample). For
comparison, the same loop run --tasks times in one process without Ray, under plain python
and under the `heatline` command (`single plain`, `single heatline`). Per mode: the median
task wall time, the median task CPU time, and each worker's summed task wall time; ratios are
to plain (to `single plain` for the single-process rows).
One run; the machine's other load is not controlled (say so where the figures are quoted).

Prints a Markdown table (docs/overhead.md, "Ray workers"); --out writes the raw numbers.
"""

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.abspath(__file__)
MODES = ("plain", "heatline", "py-spy")
# The same loop in one process, without Ray: plain python, and under the heatline command.
SINGLE = ("single plain", "single heatline")


# --- the driver: one job ---------------------------------------------------------------------


def driver(mode, address, tasks, loops, out):
    import ray

    import heatline

    @ray.remote
    def spin(loops):
        wall, cpu = time.perf_counter(), time.thread_time()
        total = 0
        for number in range(loops):
            total += number * number
        return os.getpid(), time.perf_counter() - wall, time.thread_time() - cpu

    @ray.remote
    def pid_after(seconds):
        time.sleep(seconds)
        return os.getpid()

    env = heatline.ray.runtime_env() if mode == "heatline" else None
    ray.init(address=address, runtime_env=env, log_to_driver=False)
    # Both workers started (two tasks at once on two CPUs) and warm.
    pids = sorted(set(ray.get([pid_after.remote(1.0) for _ in range(2)])))
    ray.get([spin.remote(1000) for _ in range(4)])
    spies = []
    if mode == "py-spy":
        for pid in pids:
            spies.append(subprocess.Popen(
                ["py-spy", "record", "--pid", str(pid), "--rate", "100", "--format", "raw",
                 "--output", f"{out}.{pid}.txt"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        time.sleep(2.0)  # attached before the tasks start
    block = (heatline.ray.profile_workers(f"{out}.profile.json") if mode == "heatline"
             else _nothing())
    with block:
        results = ray.get([spin.remote(loops) for _ in range(tasks)])
    for spy in spies:
        spy.send_signal(signal.SIGINT)
        spy.wait(timeout=120)
    with open(out, "w", encoding="utf-8") as file:
        json.dump({"workers": pids, "tasks": results}, file)
    ray.shutdown()


class _nothing:
    def __enter__(self):
        return None

    def __exit__(self, *exc_info):
        return False


def single(tasks, loops, out):
    """The tasks' loop run --tasks times in this process's main thread (no Ray)."""
    results = []
    for _ in range(tasks):
        wall, cpu = time.perf_counter(), time.thread_time()
        total = 0
        for number in range(loops):
            total += number * number
        results.append((os.getpid(), time.perf_counter() - wall, time.thread_time() - cpu))
    with open(out, "w", encoding="utf-8") as file:
        json.dump({"tasks": results}, file)


# --- the cluster and the runs ----------------------------------------------------------------


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _cluster_pids(marker):
    """The cluster's processes: those whose command line names its temporary directory, and
    every process below them (its workers)."""
    tree, roots = {}, []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8", errors="replace") as stat:
                ppid = int(stat.read().rpartition(")")[2].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                if marker.encode() in cmdline.read():
                    roots.append(int(entry))
        except (OSError, ValueError, IndexError):
            continue
        tree.setdefault(ppid, []).append(int(entry))
    found, todo = set(), list(roots)
    while todo:
        pid = todo.pop()
        if pid not in found:
            found.add(pid)
            todo.extend(tree.get(pid, []))
    return found


def _stop_cluster(marker):
    for sig in (signal.SIGTERM, signal.SIGKILL, signal.SIGKILL):
        for pid in _cluster_pids(marker):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        time.sleep(1.0)


def _summary(results):
    walls = [wall for _, wall, _ in results]
    cpus = [cpu for _, _, cpu in results]
    per_worker = {}
    for pid, wall, _ in results:
        per_worker[pid] = per_worker.get(pid, 0.0) + wall
    return {"median_wall_s": statistics.median(walls), "median_cpu_s": statistics.median(cpus),
            "worker_wall_s": sorted(per_worker.values())}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=24)
    parser.add_argument("--loops", type=int, default=400_000)
    parser.add_argument("--out")
    parser.add_argument("--driver", nargs=3, metavar=("MODE", "ADDRESS", "OUT"),
                        help=argparse.SUPPRESS)
    parser.add_argument("--single", metavar="OUT", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.single:
        single(args.tasks, args.loops, args.single)
        return
    if args.driver:
        mode, address, out = args.driver
        driver(mode, address, args.tasks, args.loops, out)
        return
    os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]
    if shutil.which("py-spy") is None:
        sys.exit("ray_overhead: py-spy is not installed (pip install py-spy)")
    ray_bin = os.path.join(os.path.dirname(sys.executable), "ray")
    temp = tempfile.mkdtemp(prefix="hlrayb", dir="/tmp")
    port = _free_port()
    address = f"127.0.0.1:{port}"
    env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0")
    summaries = {}
    try:
        subprocess.run([ray_bin, "start", "--head", f"--port={port}", "--num-cpus=2",
                        "--include-dashboard=false", f"--temp-dir={temp}",
                        "--disable-usage-stats"], check=True, capture_output=True, env=env,
                       timeout=300, start_new_session=True)
        for mode in MODES:
            out = os.path.join(temp, f"{mode}.json")
            subprocess.run([sys.executable, HERE, "--tasks", str(args.tasks), "--loops",
                            str(args.loops), "--driver", mode, address, out],
                           check=True, env=env, timeout=600)
            with open(out, encoding="utf-8") as file:
                summaries[mode] = _summary(json.load(file)["tasks"])
        for mode in SINGLE:
            out = os.path.join(temp, f"{mode.replace(' ', '-')}.json")
            command = [HERE, "--tasks", str(args.tasks), "--loops", str(args.loops),
                       "--single", out]
            under = ["-m", "heatline", "-q", "-o", out + ".profile.json"] \
                if mode == "single heatline" else []
            subprocess.run([sys.executable, *under, *command], check=True, env=env, timeout=600)
            with open(out, encoding="utf-8") as file:
                summaries[mode] = _summary(json.load(file)["tasks"])
    finally:
        _stop_cluster(temp)
        shutil.rmtree(temp, ignore_errors=True)
    baseline = {mode: summaries["single plain" if mode in SINGLE else "plain"]
                for mode in summaries}
    print(f"{args.tasks} tasks of a {args.loops:,}-iteration Python loop on 2 Ray workers "
          f"(Python {sys.version.split()[0]}, {os.cpu_count()} CPUs)\n")
    print("| mode | median task wall s | ratio | median task CPU s | ratio | "
          "wall s per worker (process) |")
    print("| --- | --- | --- | --- | --- | --- |")
    for mode in (*MODES, *SINGLE):
        row, plain = summaries[mode], baseline[mode]
        print(f"| {mode} | {row['median_wall_s']:.4f} | "
              f"{row['median_wall_s'] / plain['median_wall_s']:.2f} | "
              f"{row['median_cpu_s']:.4f} | {row['median_cpu_s'] / plain['median_cpu_s']:.2f} | "
              f"{', '.join(f'{w:.2f}' for w in row['worker_wall_s'])} |")
    if args.out:
        with open(args.out, "w", encoding="utf-8") as file:
            json.dump(summaries, file, indent=2)


if __name__ == "__main__":
    main()
