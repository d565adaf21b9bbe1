"""The engine's GPU part (gpu.c) against the fake NVML and CUPTI: the raw snapshot."""

import glob
import json
import os
import shutil
import subprocess
import sys

import pytest
from gpu_support import HERE, NATIVE, TRUTH, gpu_env, tagged_lines

# Starts the engine with GPU profiling on, runs the truth program, stops, and prints the GPU part
# of the snapshot with line ids resolved to (path, line).
DRIVER = r"""
import json, runpy, sys
from heatline import _native
from heatline.engine import scope
_native.start(0.01, exclude_prefixes=scope.default_exclude_prefixes(), gpu=int(sys.argv[2]))
runpy.run_path(sys.argv[1], run_name="__main__")
_native.stop()
snap = _native.snapshot()
files = [f["path"] for f in snap["files"]]
where = lambda key: None if key is None else [files[key[0]], key[1]]
gpu = snap["gpu"]
for line in gpu["lines"]:
    line["line"] = where(line["line"])
for kernel in gpu["kernels"]:
    kernel["lines"] = [[where(key), calls, ns] for key, calls, ns in kernel["lines"]]
peak = gpu["alloc_peak_at"]
gpu["alloc_peak_at"] = None if peak is None else [files[peak["file"]], peak["line"]]
print(json.dumps(gpu), file=sys.stderr)
"""

MS = 1_000_000


def run_engine(fakes, mode=1, **env):
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, TRUTH, str(mode)],
        env=gpu_env(fakes, **env), capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "done\n"
    return json.loads(done.stderr.strip().splitlines()[-1])


def by_line(gpu):
    tags = {number: tag for tag, number in tagged_lines().items()}
    result = {}
    for entry in gpu["lines"]:
        path, number = entry["line"]
        assert path == TRUTH, entry
        result[tags.get(number, number)] = entry
    return result


def test_gpu_time_bytes_and_launches_are_charged_exactly_to_the_launching_lines(fakes):
    gpu = run_engine(fakes)
    assert gpu["enabled"] and gpu["kernel_tracing"] and gpu["warnings"] == []
    lines = by_line(gpu)
    assert set(lines) == {"alloc", "matmul", "h2d", "d2h", "memset", "thread", "thread_matmul"}

    def fields(tag):
        e = lines[tag]
        return (
            e["gpu_ns"],
            e["gpu_launches"],
            e["gpu_copy_h2d_bytes"],
            e["gpu_copy_d2h_bytes"],
            e["gpu_copy_other_bytes"],
            e["gpu_alloc_bytes"],
        )

    assert fields("matmul") == (10 * 3 * MS, 10, 0, 0, 0, 0)
    assert fields("h2d") == (500_000, 1, 1 << 20, 0, 0, 0)
    assert fields("d2h") == (20_000, 1, 0, 4096, 0, 0)
    assert fields("memset") == (7_000, 1, 0, 0, 0, 0)
    assert fields("thread") == (5 * MS, 5, 0, 0, 0, 0)  # launched from a second thread
    assert fields("thread_matmul") == (2 * MS, 1, 0, 0, 0, 0)
    assert fields("alloc") == (0, 0, 0, 0, 0, 256 << 20)
    assert gpu["records"] == 10 + 3 + 6
    assert gpu["unmatched_records"] == 0 and gpu["unattributed_gpu_ns"] == 0
    assert gpu["alloc_peak_bytes"] == 256 << 20
    assert gpu["alloc_peak_at"] == [TRUTH, tagged_lines()["alloc"]]


def test_kernels_table_has_demangled_names_calls_time_and_launching_lines(fakes):
    gpu = run_engine(fakes)
    tags = tagged_lines()
    kernels = {k["raw_name"]: k for k in gpu["kernels"]}
    assert set(kernels) == {"_Z6matmulPKfS0_Pfi", "relu_kernel"}
    matmul = kernels["_Z6matmulPKfS0_Pfi"]
    assert matmul["name"] == "matmul(float const*, float const*, float*, int)"
    assert (matmul["calls"], matmul["gpu_ns"]) == (11, 32 * MS)
    assert sorted(matmul["lines"]) == sorted(
        [[[TRUTH, tags["matmul"]], 10, 30 * MS], [[TRUTH, tags["thread_matmul"]], 1, 2 * MS]]
    )
    relu = kernels["relu_kernel"]
    assert relu["name"] == "relu_kernel"  # not a mangled name: kept as is
    assert (relu["calls"], relu["gpu_ns"], relu["lines"]) == (
        5,
        5 * MS,
        [[[TRUTH, tags["thread"]], 5, 5 * MS]],
    )


def test_device_timeline_holds_the_values_the_device_reported(fakes):
    gpu = run_engine(fakes)
    (device,) = gpu["devices"]
    assert device["name"] == "Fake GPU 0" and device["memory_total_bytes"] == 16 << 30
    utils = {v for _, v in device["utilisation_timeline"]}
    used = {v for _, v in device["memory_timeline"]}
    # Every value the timeline holds was reported at some point, and each phase was sampled.
    assert {40, 80} <= utils <= {0, 40, 80}
    assert {1 << 30, 3 << 30} <= used <= {0, 1 << 30, 3 << 30, 1 << 29}
    assert device["peak_memory_used_bytes"] == 3 << 30
    assert device["samples"] >= 6 and 0 < device["idle_samples"] < device["samples"]
    assert 0 < device["utilisation_pct_sum"] <= 80 * device["samples"]


def test_gpu_off_records_nothing_and_does_not_load_the_libraries(fakes):
    gpu = run_engine(fakes, mode=0, HEATLINE_GPU_PROFILED="")
    assert (
        gpu["enabled"], gpu["kernel_tracing"], gpu["lines"], gpu["kernels"], gpu["devices"]
    ) == (False, False, [], [], [])


def test_cupti_missing_is_a_warning_and_devices_are_still_sampled(fakes):
    gpu = run_engine(fakes, HEATLINE_CUPTI_LIBRARY="/nonexistent/libcupti.so")
    assert gpu["enabled"] and not gpu["kernel_tracing"]
    (warning,) = gpu["warnings"]
    assert "CUPTI could not be loaded" in warning and "/nonexistent/libcupti.so" in warning
    assert gpu["lines"] == [] and gpu["kernels"] == []
    assert gpu["devices"][0]["peak_memory_used_bytes"] == 3 << 30


def test_cupti_taken_by_another_profiler_is_a_warning(fakes):
    gpu = run_engine(fakes, FAKE_CUPTI_TAKEN="1")
    assert gpu["enabled"] and not gpu["kernel_tracing"]
    (warning,) = gpu["warnings"]
    assert "in use by another profiler" in warning


def test_auto_without_nvml_is_silently_off(fakes):
    gpu = run_engine(fakes, mode=2, HEATLINE_NVML_LIBRARY="/nonexistent/libnvidia-ml.so.1",
                     HEATLINE_GPU_PROFILED="")
    assert (gpu["enabled"], gpu["kernel_tracing"], gpu["warnings"], gpu["lines"]) == (
        False, False, [], []
    )


def test_forced_on_without_nvml_says_why(fakes):
    gpu = run_engine(
        fakes,
        mode=1,
        HEATLINE_NVML_LIBRARY="/nonexistent/libnvidia-ml.so.1",
        HEATLINE_GPU_PROFILED="",
    )
    (warning,) = gpu["warnings"]
    assert "NVML could not be loaded" in warning


def _cuda_include():
    candidates = [
        os.environ.get("CUDA_HOME", ""),
        "/usr/local/cuda",
        *sorted(glob.glob("/usr/local/cuda-*")),
    ]
    for root in candidates:
        if root and os.path.exists(os.path.join(root, "include", "cupti.h")):
            return os.path.join(root, "include")
    return None


def test_declared_offsets_and_constants_match_the_real_cupti_headers():
    include, compiler = _cuda_include(), shutil.which("gcc") or shutil.which("cc")
    if include is None or compiler is None:
        pytest.skip("needs NVIDIA's CUPTI headers (CUDA_HOME or /usr/local/cuda*) and a C compiler")
    done = subprocess.run(
        [compiler, "-fsyntax-only", "-I", include, "-I", NATIVE]
        + [os.path.join(HERE, "layout_check.c")],
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stderr


# NVML is read from a thread of the GPU part's own, which shares the program's descriptor table
# as the driver's library needs (the fake fails a query from a thread whose table lacks its
# "driver" descriptor, as the sampler thread's own table does), and which is joined around
# os.fork() like the sampler: the program's before-fork hook (registered before heatline's, so
# run after it) sees only its own thread.
POLLER = r"""
import ctypes, json, os, time
import heatline

nvml = ctypes.CDLL(os.environ["FAKE_NVML_PATH"])
nvml.fake_nvml_queries.restype = nvml.fake_nvml_failures.restype = ctypes.c_ulonglong
threads_at_fork = []
os.register_at_fork(before=lambda: threads_at_fork.append(len(os.listdir("/proc/self/task"))))

def sampled(count):
    start = nvml.fake_nvml_queries()
    deadline = time.monotonic() + 60
    while nvml.fake_nvml_queries() < start + count and time.monotonic() < deadline:
        time.sleep(0.01)

with heatline.profile(quiet=True) as p:
    sampled(3)
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    sampled(3)  # sampling goes on after the fork
print(json.dumps({"failures": nvml.fake_nvml_failures(), "threads_at_fork": threads_at_fork,
                  "samples": p.data["gpu"]["devices"][0]["samples"]}))
"""


def test_nvml_is_polled_in_the_programs_descriptor_table_and_stopped_around_fork(fakes):
    done = subprocess.run(
        [sys.executable, "-c", POLLER], env=gpu_env(fakes, HEATLINE_GPU_PROFILED=""),
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["failures"] == 0 and out["threads_at_fork"] == [1], out
    assert out["samples"] >= 6, out
