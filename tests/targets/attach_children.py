"""For heatline attach: a program that starts child processes once attached, and again after the
detach. argv: DIRECTORY. Writes DIRECTORY/ready (its pid), then waits for DIRECTORY/go (the
test attaches first) and runs, while attached:

- a fork Pool(2) mapping spin over two tasks (each worker spins SPIN_S of wall time, in pure
  Python);
- a Python subprocess of sys.executable running this file's `child` mode (spins SPIN_S);
- a multiprocessing process of the spawn start method running spin;

each records (pid, begun, ended) of its spin in DIRECTORY/truth-*.json; and a fork Pool(1)
started then and kept past the detach (its worker, still running at the detach, records its
pid in DIRECTORY/keeper.json). The program also prints
what it sees of its own environment meanwhile (os.environ and the C environment: no variable of
heatline's). Then it writes its threads' ids (threading's: its own) in DIRECTORY/threads.json and
DIRECTORY/attached-done and waits for DIRECTORY/after (the test has
detached), forks a child and runs the subprocess again, each recording its pid, its threads and
its environment's heatline variables in DIRECTORY/after-*.json, and has the kept Pool's worker
wait until it runs on its own thread alone (its profiling stopped: DIRECTORY/after-keeper.json
says how many threads it had and how long it waited); then DIRECTORY/finish ends it.
Its output is deterministic: a profiled run's must be a plain run's, byte for byte."""

import ctypes
import json
import multiprocessing
import os
import subprocess
import sys
import threading
import time

from _attachable import allow_tracing, mark, wait_for

SPIN_S = 0.6


def spin(task):
    """Spin SPIN_S of wall time in pure Python; record when, in which process."""
    directory, name = task
    begun = time.time()
    end = time.monotonic() + SPIN_S
    count = 0
    while time.monotonic() < end:
        count += 1
    ended = time.time()
    mark(directory, f"truth-{name}.json", json.dumps([os.getpid(), begun, ended]))
    return name


def heatline_variables():
    """heatline's variables in os.environ and in the C environment (what an exec passes on),
    and PYTHONPATH in both."""
    getenv = ctypes.CDLL(None).getenv
    getenv.restype = ctypes.c_char_p
    return {
        "environ": sorted(k for k in os.environ if "HEATLINE" in k),
        "c": [name for name in ("HEATLINE_CHILD",) if getenv(name.encode()) is not None],
        "PYTHONPATH": [os.environ.get("PYTHONPATH"), getenv(b"PYTHONPATH")],
    }


def report(directory, name):
    """What a process started after the detach sees: heatline's variables in its environment,
    its threads (a profiled process has the sampler's too), heatline's engine loaded or not."""
    with open("/proc/self/maps") as file:
        engine = any("heatline/_native" in line for line in file)
    mark(directory, f"after-{name}.json", json.dumps({
        "pid": os.getpid(), "variables": heatline_variables()["environ"],
        "threads": len(os.listdir("/proc/self/task")), "engine": engine}))


def keeper_pid(directory):
    mark(directory, "keeper.json", json.dumps(os.getpid()))
    return os.getpid()


def keeper_alone(directory):
    """In the kept Pool's worker after the detach: until it has only its own thread (the
    sampler gone), or a minute (a hang guard)."""
    begun = time.monotonic()
    while len(os.listdir("/proc/self/task")) > 1 and time.monotonic() - begun < 60:
        time.sleep(0.01)
    mark(directory, "after-keeper.json", json.dumps({
        "pid": os.getpid(), "threads": len(os.listdir("/proc/self/task")),
        "waited_s": time.monotonic() - begun}))
    return os.getpid()


def main():
    directory = sys.argv[1]
    allow_tracing()
    mark(directory, "ready", str(os.getpid()))
    wait_for(directory, "go")
    keeper = multiprocessing.get_context("fork").Pool(1)
    keeper.apply(keeper_pid, (directory,))
    with multiprocessing.get_context("fork").Pool(2) as pool:
        print("pool", pool.map(spin, [(directory, "pool-a"), (directory, "pool-b")],
                               chunksize=1), flush=True)
    done = subprocess.run([sys.executable, __file__, "child", directory, "subprocess"],
                          stdout=subprocess.PIPE, text=True, check=True)
    print("subprocess said", done.stdout.strip(), flush=True)
    spawned = multiprocessing.get_context("spawn").Process(target=spin,
                                                           args=((directory, "spawned"),))
    spawned.start()
    spawned.join()
    print("spawned exit", spawned.exitcode, flush=True)
    print("while attached", heatline_variables(), flush=True)
    mark(directory, "threads.json",  # its own threads (the kept Pool's among them)
         json.dumps(sorted(thread.native_id for thread in threading.enumerate())))
    mark(directory, "attached-done")

    wait_for(directory, "after")
    child = os.fork()
    if child == 0:
        report(directory, "fork")
        os._exit(0)
    print("fork after exit", os.waitpid(child, 0)[1], flush=True)
    done = subprocess.run([sys.executable, __file__, "child", directory, "later"],
                          stdout=subprocess.PIPE, text=True, check=True)
    print("later subprocess said", done.stdout.strip(), flush=True)
    print("after", heatline_variables(), flush=True)
    print("keeper same worker",
          keeper.apply(keeper_alone, (directory,)) == keeper.apply(keeper_pid, (directory,)),
          flush=True)
    keeper.close()
    keeper.join()
    wait_for(directory, "finish")
    print("done", flush=True)


def child():
    directory, name = sys.argv[2], sys.argv[3]
    if name == "later":
        report(directory, name)
    else:
        spin((directory, name))
    print(name, "variables", heatline_variables()["environ"])


if __name__ == "__main__":
    if sys.argv[1:2] == ["child"]:
        child()
    else:
        main()
