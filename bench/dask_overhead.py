"""What profiling costs a Dask worker: the same task workload on workers with Dask's built-in
profiler off, with it on (Dask's default), and under heatline.dask.profile_workers; beside it,
the same tasks in one process under plain Python and under `heatline script.py`.

    python bench/dask_overhead.py [--rounds 5] [--workers 2] [--tasks 40]

Two clusters run side by side, each a scheduler and WORKERS workers (`dask scheduler`,
`dask worker --nthreads 1`, processes of their own on this machine): one with
distributed.worker.profile.enabled off, one with it at its default (on). Each round maps
TASKS tasks (a pure-Python loop building small strings, about 0.05 s each on an idle
machine) over one cluster's workers and gathers them. Per round: each task's own CPU time
(time.thread_time) and wall time (perf_counter) inside the task, summed per worker and
averaged over the workers, and the client's wall time from the map to the gather ("job"). The heatline rounds run on the cluster with Dask's profiler at its default,
inside `with heatline.dask.profile_workers(...)` (which pauses Dask's sampler for the block);
their "job" excludes the block's end (heatline stopped, the profiles gathered, merged and
written), timed apart ("end of block"). The three kinds of round alternate (off, on,
heatline, off, ...), so that the machine's changing load falls on each alike. Single
process: one worker's share of the tasks one after another in one process, `python` against
`heatline -q -o ...` (the loop's CPU and wall time, printed by the program itself).

Prints Markdown: the medians over the rounds and their ratios to Dask's profiler off.
"""

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

N = 120_000


def work(n=N):
    started, cpu = time.perf_counter(), time.thread_time()
    words = []
    total = 0
    for i in range(n):
        total += i * i % 7
        words.append(str(i))
        if len(words) > 500:
            words.clear()
    from distributed import get_worker

    return get_worker().address, time.perf_counter() - started, time.thread_time() - cpu


def single(tasks):
    """The tasks one after another in this process: prints the loop's time."""
    started, cpu = time.perf_counter(), time.thread_time()
    for _ in range(tasks):
        words = []
        total = 0
        for i in range(N):
            total += i * i % 7
            words.append(str(i))
            if len(words) > 500:
                words.clear()
    print(json.dumps({"loop_s": time.perf_counter() - started,
                      "cpu_s": time.thread_time() - cpu}))


class Cluster:
    def __init__(self, workers, directory, dask_profiler):
        env = dict(os.environ, DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED=str(dask_profiler))
        self.file = os.path.join(directory, f"scheduler-{dask_profiler}.json")
        self.processes = []
        dask = [sys.executable, "-m"]
        self._start(dask + ["distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                            "--port", "0", "--no-dashboard", "--scheduler-file", self.file], env)
        deadline = time.monotonic() + 600  # a hang guard: start-up on a loaded machine
        while not os.path.exists(self.file):
            if time.monotonic() > deadline:
                raise SystemExit("the scheduler did not start")
            time.sleep(0.2)
        for _ in range(workers):
            self._start(dask + ["distributed.cli.dask_worker", "--scheduler-file", self.file,
                                "--nthreads", "1", "--no-dashboard", "--host", "127.0.0.1"],
                        env)
        from distributed import Client

        self.client = Client(scheduler_file=self.file, timeout="600s")
        self.client.wait_for_workers(workers, timeout=600)

    def _start(self, argv, env):
        self.processes.append(subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL,
                                               stderr=subprocess.DEVNULL,
                                               start_new_session=True))

    def round(self, tasks):
        started = time.perf_counter()
        futures = self.client.map(work, [N] * tasks, pure=False)
        results = self.client.gather(futures)
        job = time.perf_counter() - started
        wall, cpu = {}, {}
        for address, seconds, cpu_seconds in results:
            wall[address] = wall.get(address, 0.0) + seconds
            cpu[address] = cpu.get(address, 0.0) + cpu_seconds
        return statistics.mean(wall.values()), job, statistics.mean(cpu.values())

    def close(self):
        try:
            self.client.close()
        finally:
            for process in self.processes:
                try:
                    os.killpg(process.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                process.wait(timeout=60)


def heatline_round(cluster, tasks, directory):
    import heatline

    out = os.path.join(directory, "job.json")
    block = heatline.dask.profile_workers(out, client=cluster.client)
    with block:
        per_worker, job, cpu = cluster.round(tasks)
        left = time.perf_counter()
    return per_worker, job, cpu, time.perf_counter() - left


def single_process(tasks, rounds, directory):
    heatline_command = [sys.executable, "-m", "heatline", "-q", "-o",
                        os.path.join(directory, "single.json")]
    results = {"python": [], "heatline": []}
    for _ in range(rounds):
        for name, prefix in (("python", [sys.executable]), ("heatline", heatline_command)):
            done = subprocess.run([*prefix, __file__, "--single", str(tasks)],
                                  capture_output=True, text=True, timeout=1800, check=True)
            results[name].append(json.loads(done.stdout.strip().splitlines()[-1]))
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--tasks", type=int, default=40)
    parser.add_argument("--single", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.single is not None:
        single(args.single)
        return
    rows: dict[str, list] = {"Dask's profiler off": [], "Dask's profiler on (default)": [],
                             "heatline.dask.profile_workers": []}
    with tempfile.TemporaryDirectory() as directory:
        off = on = None
        try:
            off = Cluster(args.workers, directory, dask_profiler=False)
            on = Cluster(args.workers, directory, dask_profiler=True)
            off.round(args.tasks)  # warm: imports, connections
            on.round(args.tasks)
            heatline_round(on, args.tasks, directory)  # warm: heatline's imports
            for _ in range(args.rounds):  # interleaved: the machine's load drifts
                rows["Dask's profiler off"].append(off.round(args.tasks))
                rows["Dask's profiler on (default)"].append(on.round(args.tasks))
                rows["heatline.dask.profile_workers"].append(
                    heatline_round(on, args.tasks, directory))
        finally:
            for cluster in (off, on):
                if cluster is not None:
                    cluster.close()
        single_rows = single_process(args.tasks // args.workers, args.rounds, directory)

    def median(results: list, index: int) -> float:
        return statistics.median(r[index] for r in results)

    base = rows["Dask's profiler off"]
    print(f"{args.workers} workers x 1 thread, {args.tasks} tasks a round, "
          f"{args.rounds} rounds (interleaved); medians\n")
    print("| workers | task CPU s per worker | ratio | task wall s per worker | ratio "
          "| job s | ratio | end of block s |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, results in rows.items():
        end = f"{median(results, 3):.2f}" if len(results[0]) > 3 else "-"
        print(f"| {name} | {median(results, 2):.2f} | {median(results, 2) / median(base, 2):.2f}x "
              f"| {median(results, 0):.2f} | {median(results, 0) / median(base, 0):.2f}x "
              f"| {median(results, 1):.2f} | {median(results, 1) / median(base, 1):.2f}x "
              f"| {end} |")
    print(f"\nOne process, the same {args.tasks // args.workers} tasks (one worker's share) "
          "one after another:\n")
    print("| process | CPU s | ratio | wall s | ratio |")
    print("| --- | --- | --- | --- | --- |")
    plain_cpu = statistics.median(r["cpu_s"] for r in single_rows["python"])
    plain_wall = statistics.median(r["loop_s"] for r in single_rows["python"])
    for name, label in (("python", "python"), ("heatline", "heatline script.py")):
        cpu = statistics.median(r["cpu_s"] for r in single_rows[name])
        wall = statistics.median(r["loop_s"] for r in single_rows[name])
        print(f"| {label} | {cpu:.2f} | {cpu / plain_cpu:.2f}x | {wall:.2f} "
              f"| {wall / plain_wall:.2f}x |")

if __name__ == "__main__":
    main()
