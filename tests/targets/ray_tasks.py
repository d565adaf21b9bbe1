"""A Ray driver for tests/integration/test_ray_workers.py: two remote functions and an actor's
method spin on their own lines under heatline.ray.profile_workers; each run measures its own
thread's CPU time (the ground truth) and the driver writes what they measured.

    python ray_tasks.py ADDRESS PROFILE TRUTH [LOOPS]

An actor's worker exits in the block (os._exit), after it joined: its work is missing. With
RAY_TASKS_NO_HEATLINE=DIR, one more actor runs with DIR first on its PYTHONPATH (a
heatline package there that cannot be imported): its worker cannot load heatline.
"""

import json
import os
import sys
import time

import ray

import heatline


@ray.remote
def spin_a(loops):
    start = time.thread_time()
    total = 0
    for number in range(loops):
        total += number * number  # spin_a's line
    return os.getpid(), time.thread_time() - start


@ray.remote
def pause(seconds):
    time.sleep(seconds)


@ray.remote
def spin_b(loops):
    start = time.thread_time()
    total = 0
    for number in range(loops):
        total ^= number + 7  # spin_b's line
    return os.getpid(), time.thread_time() - start


@ray.remote
class Counter:
    def __init__(self):
        self.total = 0

    def add(self, loops):
        start = time.thread_time()
        for number in range(loops):
            self.total += number % 3  # Counter.add's line
        return os.getpid(), time.thread_time() - start


@ray.remote(max_restarts=0)
class Doomed:
    def pid(self):
        return os.getpid()

    def die(self):
        os._exit(3)


@ray.remote
class Unprofiled:
    def pid(self):
        return os.getpid()


def main():
    address, profile_path, truth_path = sys.argv[1:4]
    loops = int(sys.argv[4]) if len(sys.argv) > 4 else 2_000_000
    ray.init(address=address, runtime_env=heatline.ray.runtime_env(), log_to_driver=False)
    # Two task workers started (two tasks at once on the two CPUs), their reporters running,
    # before the block.
    ray.get([pause.remote(1.0) for _ in range(2)])
    ray.get([spin_a.remote(10), spin_b.remote(10)])
    counter = Counter.remote()
    ray.get(counter.add.remote(10))
    unprofiled = None
    if os.environ.get("RAY_TASKS_NO_HEATLINE"):
        unprofiled = Unprofiled.options(
            runtime_env={"env_vars": {"PYTHONPATH": os.environ["RAY_TASKS_NO_HEATLINE"]}}
        ).remote()
        ray.get(unprofiled.pid.remote())
    doomed = Doomed.remote()
    doomed_pid = ray.get(doomed.pid.remote())
    counts = {"spin_a": 6, "spin_b": 4, "Counter.add": 3}
    # The two task workers, Counter's and Doomed's (and Unprofiled's, reporting its problem).
    workers = 4 + (unprofiled is not None)
    with heatline.ray.profile_workers(profile_path, cpu_only=True, min_workers=workers):
        runs = {
            "spin_a": [spin_a.remote(loops) for _ in range(counts["spin_a"])],
            "spin_b": [spin_b.remote(loops) for _ in range(counts["spin_b"])],
            "Counter.add": [counter.add.remote(loops) for _ in range(counts["Counter.add"])],
        }
        measured = {name: ray.get(refs) for name, refs in runs.items()}
        try:  # a worker that dies in the block, after it joined
            ray.get(doomed.die.remote())
        except ray.exceptions.RayActorError:
            pass
        unprofiled_pid = None if unprofiled is None else ray.get(unprofiled.pid.remote())
    with open(truth_path, "w") as out:
        json.dump({"driver": os.getpid(), "tasks": measured, "unprofiled": unprofiled_pid,
                   "died": doomed_pid}, out)
    ray.shutdown()


if __name__ == "__main__":
    main()
