"""Run one command and measure it: wall time, CPU time and peak memory of its process tree.

Memory. A profiler may run the program in a child process (py-spy is the parent of the Python
it profiles; Scalene re-executes itself under LD_PRELOAD), so the peak memory of interest is
that of the whole process tree, profiler included. Two measurements are taken and the larger
is reported as `peak_rss_kb`:

- `tree_rss_kb`: every POLL_S seconds the harness lists the process tree (from
  /proc/PID/task/TID/children, recursively) and sums the resident set sizes (VmRSS) of its
  members; the largest sum seen. Short peaks between two polls can be missed, and pages shared
  between processes (the Python binary) are counted once per process.
- `max_rss_kb`: `ru_maxrss` from wait4() on the direct child, which the kernel computes as the
  largest peak RSS of any single process in the tree that was waited for. It cannot miss a peak
  but never adds up two processes.

So `peak_rss_kb` is a lower bound of the tree's true peak, exact for single-process runs up to
the kernel's own accounting.

CPU time (`cpu_s`) is user + system time of the child and every descendant it waited for
(wait4's rusage), i.e. the total CPU the run cost, profiler threads and processes included.
"""

import json
import os
import signal
import subprocess
import threading
import time

POLL_S = 0.02
STDERR_TAIL = 1500
TICK = os.sysconf("SC_CLK_TCK")


def machine_busy_s():
    """CPU seconds all processes of the machine have used since boot (from /proc/stat)."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()[1:]
        user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in fields[:8])
        return (user + nice + system + irq + softirq + steal) / TICK
    except (OSError, ValueError):
        return None


def wait_quiet(max_wait_s=20.0, busy_cores=0.5, sample_s=0.25):
    """Wait (at most max_wait_s) until the rest of the machine uses less than busy_cores CPUs:
    the machine is shared. Returns the cores other processes used in the last sample."""
    if max_wait_s <= 0:
        return None
    waited = 0.0
    while True:
        before = machine_busy_s()
        time.sleep(sample_s)
        after = machine_busy_s()
        if before is None or after is None:
            return None
        busy = (after - before) / sample_s
        if busy < busy_cores or waited >= max_wait_s:
            return round(busy, 2)
        time.sleep(1.0)
        waited += 1.0 + sample_s


def _children(pid):
    found = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                found.extend(int(c) for c in f.read().split())
        except (OSError, ValueError):
            pass
    return found


def _rss_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def tree_rss_kb(root):
    total, todo, seen = 0, [root], set()
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        total += _rss_kb(pid)
        todo.extend(_children(pid))
    return total


def run_measured(command, *, cwd=None, env=None, timeout_s=600.0, stdout_path=None):
    """Run command; return a dict with ok, returncode, wall_s, cpu_s, peak_rss_kb,
    tree_rss_kb, max_rss_kb, others_cores (CPU used by the rest of the machine meanwhile),
    error (stderr tail when it failed)."""
    stderr_path = os.path.join(cwd or ".", ".bench-stderr")
    stdout = open(stdout_path, "wb") if stdout_path else subprocess.DEVNULL
    busy_before = machine_busy_s()
    with open(stderr_path, "wb") as err:
        start = time.perf_counter()
        try:
            proc = subprocess.Popen(command, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                    stdout=stdout, stderr=err, start_new_session=True)
        except OSError as e:
            if stdout_path:
                stdout.close()
            return {"ok": False, "returncode": None, "error": f"could not start: {e}"}
        peak = [0]
        done = threading.Event()
        timed_out = [False]

        def poll():
            while not done.is_set():
                peak[0] = max(peak[0], tree_rss_kb(proc.pid))
                if time.perf_counter() - start > timeout_s:
                    timed_out[0] = True
                    try:
                        os.killpg(proc.pid, signal.SIGKILL)
                    except OSError:
                        pass
                    return
                done.wait(POLL_S)

        poller = threading.Thread(target=poll, daemon=True)
        poller.start()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        busy_after = machine_busy_s()
        done.set()
        poller.join()
        proc.returncode = os.waitstatus_to_exitcode(status)
    if stdout_path:
        stdout.close()
    # Descendants left behind (a profiler's helper) are not ours to keep.
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass
    with open(stderr_path, "rb") as f:
        stderr = f.read().decode("utf-8", "replace")
    os.unlink(stderr_path)
    max_rss = usage.ru_maxrss  # KiB on Linux
    result = {
        "ok": proc.returncode == 0 and not timed_out[0],
        "returncode": proc.returncode,
        "wall_s": round(wall, 4),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 4),
        "tree_rss_kb": peak[0],
        "max_rss_kb": max_rss,
        "peak_rss_kb": max(peak[0], max_rss),
    }
    if busy_before is not None and busy_after is not None:
        # CPU the rest of the machine used meanwhile (another user's tests on a shared VM), in
        # cores: a noise indicator. Includes the harness's own RSS poller, which is small.
        others = busy_after - busy_before - result["cpu_s"]
        result["others_cores"] = round(max(others, 0.0) / wall, 3) if wall > 0 else None
    if timed_out[0]:
        result["error"] = f"timed out after {timeout_s:.0f} s"
    elif proc.returncode != 0:
        tail = stderr.strip()[-STDERR_TAIL:]
        result["error"] = f"exit status {proc.returncode}: {tail}" if tail else f"exit status {proc.returncode}"
    return result


def printed_json(path):
    """The last line of the run's stdout that is a JSON object: what the program printed (a
    profiler may write its own lines to the same stdout, as py-spy does)."""
    with open(path) as f:
        lines = [line for line in f.read().splitlines() if line.startswith("{")]
    if not lines:
        raise ValueError("the program printed no JSON line")
    return json.loads(lines[-1])


def precompile_heatline(python, env=None):
    """Write heatline's bytecode caches (.pyc) before timing anything.

    pip writes them when it installs a package, so users' runs never compile heatline's
    modules; but the bench installs heatline in editable mode, and with PYTHONDONTWRITEBYTECODE
    set (as it is on some machines) every profiled run would recompile them, about 10 ms that no
    user pays. compileall writes the caches whatever that variable says."""
    code = "import compileall, os, heatline; compileall.compile_dir(os.path.dirname(heatline.__file__), quiet=1)"
    subprocess.run([python, "-c", code], check=False, stdout=subprocess.DEVNULL, env=env)
