"""What children see and how they end, printed deterministically: the same bytes under python
and under heatline. argv[1] picks the case."""

import json
import multiprocessing
import os
import signal
import subprocess
import sys


def seen():
    return {
        "environ": sorted(os.environ.items()),
        "argv": sys.argv,
        "path": sys.path,
        "sigterm": str(signal.getsignal(signal.SIGTERM)),
    }


def report(queue):
    queue.put(seen())


def crash():
    raise SystemExit(7)


def spin_then_exit(code):
    total = 0
    for i in range(1_000_000):
        total += i
    os._exit(code)


if __name__ == "__main__":
    case = sys.argv[1]
    if case == "subprocess":
        code = ("import json, os, sys; os.environ.pop('_', None); "  # '_' is the shell's
                "print(json.dumps([sorted(os.environ.items()), sys.argv]))")
        out = subprocess.run([sys.executable, "-c", code, "x", "y"],
                             capture_output=True, text=True, check=True).stdout
        print(out, end="")
        print(os.environ.get("PYTHONPATH"))
    elif case in ("spawn", "fork", "forkserver"):
        context = multiprocessing.get_context(case)
        queue = context.Queue()
        process = context.Process(target=report, args=(queue,))
        process.start()
        child = queue.get()
        process.join()
        mine = seen()
        print(json.dumps({key: child[key] == mine[key] for key in mine}), process.exitcode)
        print(json.dumps(child["argv"][:1]))
    elif case == "exits":
        context = multiprocessing.get_context("fork")
        statuses = []
        for target, args in ((crash, ()), (spin_then_exit, (3,))):
            process = context.Process(target=target, args=args)
            process.start()
            process.join()
            statuses.append(process.exitcode)
        pid = os.fork()
        if pid == 0:
            spin_then_exit(5)
        statuses.append(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
        pid = os.fork()
        if pid == 0:
            os.kill(os.getpid(), signal.SIGKILL)
        statuses.append(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
        print(statuses)
    elif case == "thread":  # fork from a thread other than the main one
        import threading

        def fork_and_wait():
            pid = os.fork()
            if pid == 0:
                spin_then_exit(4)
            print(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))

        thread = threading.Thread(target=fork_and_wait)
        thread.start()
        thread.join()
    elif case == "outlive":
        child = subprocess.Popen(
            [sys.executable, "-c", "import time; print('up', flush=True); time.sleep(60)"],
            start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        )
        child.stdout.readline()  # it is running (and profiled) before the parent ends
        print(child.pid)
