"""Whole-process CPU time (user + system, the program's and heatline's threads together) of
bench/workloads.py under `heatline -q --native` and `--no-native` (docs/overhead.md), in fresh
processes, interleaved: the median over rounds of each mode's CPU over plain Python's, and of
the pairwise ratio native on / off. ENGINE_SRC (a checkout's src/ with _native built in place)
adds the same two modes with that heatline, e.g. the main checkout's.

    python bench/native_cpu_pairs.py [ROUNDS] [WORKLOAD,...] [ENGINE_SRC]
"""

import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def cpu_of(command: list[str], env: dict[str, str]) -> float:
    child = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise SystemExit(f"{command} failed: {child.returncode}")
    return usage.ru_utime + usage.ru_stime


def median(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    workloads = (sys.argv[2] if len(sys.argv) > 2 else "pure_python,numpy_heavy").split(",")
    other = sys.argv[3] if len(sys.argv) > 3 else None
    engines = {"this": dict(os.environ)}
    if other:
        engines["other"] = dict(os.environ, PYTHONPATH=other)
    script = os.path.join(HERE, "workloads.py")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "p.json")
        for workload in workloads:
            cpu: dict[str, list[float]] = {}
            for _ in range(rounds):
                cpu.setdefault("python", []).append(
                    cpu_of([sys.executable, script, workload], dict(os.environ)))
                for engine, env in engines.items():
                    for flag in ("--native", "--no-native"):
                        command = [sys.executable, "-m", "heatline", "-q", flag, "-o", out,
                                   script, workload]
                        cpu.setdefault(f"{engine} {flag}", []).append(cpu_of(command, env))
            plain = median(cpu["python"])
            print(f"{workload}: plain Python {plain:.2f} s CPU (median of {rounds})")
            for key, values in cpu.items():
                if key != "python":
                    print(f"  {key}: {median(values):.2f} s, x{median(values) / plain:.3f}")
            for engine in engines:
                pairs = [on / off for on, off in zip(cpu[f"{engine} --native"],
                                                     cpu[f"{engine} --no-native"])]
                print(f"  {engine}: native on / off, median of pairs {median(pairs):.3f} "
                      f"(min {min(pairs):.3f}, max {max(pairs):.3f})")


if __name__ == "__main__":
    main()
