"""GPU profiling end to end (heatline --gpu), against the fake NVML and CUPTI: the profile's
GPU fields, the terminal report's GPU section, and the program left unaffected."""

import json
import re
import subprocess
import sys

from gpu_support import TRUTH, gpu_env, tagged_lines

MS = 1_000_000


def heatline(fakes, *options, program=TRUTH, **env):
    return subprocess.run(
        [sys.executable, "-m", "heatline", *options, program],
        env=gpu_env(fakes, **env), capture_output=True, text=True, timeout=120,
    )


def profiled(fakes, tmp_path, *options, **env):
    out = tmp_path / "profile.json"
    done = heatline(fakes, "-o", str(out), *options, **env)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "done\n"
    with open(out, encoding="utf-8") as f:
        return json.load(f), done.stderr


def truth_lines(profile):
    return {line["line"]: line for line in profile["files"][TRUTH]["lines"]}


def test_profile_lines_functions_and_gpu_object_hold_the_exact_truth(fakes, tmp_path):
    profile, _ = profiled(fakes, tmp_path)  # auto: on, since the (fake) NVML reports a device
    tags = tagged_lines()
    lines = truth_lines(profile)

    def fields(tag):
        line = lines[tags[tag]]
        return (
            line["gpu_s"],
            line["gpu_launches"],
            line["gpu_copy_bytes"],
            line["gpu_copy_h2d_bytes"],
            line["gpu_copy_d2h_bytes"],
            line["gpu_alloc_bytes"],
        )

    assert fields("matmul") == (0.03, 10, 0, 0, 0, 0)
    assert fields("h2d") == (0.0005, 1, 1 << 20, 1 << 20, 0, 0)
    assert fields("d2h") == (0.00002, 1, 4096, 0, 4096, 0)
    assert fields("memset") == (0.000007, 1, 0, 0, 0, 0)
    assert fields("thread") == (0.005, 5, 0, 0, 0, 0)
    assert fields("alloc") == (0.0, 0, 0, 0, 0, 256 << 20)
    untouched = [line for number, line in lines.items() if number not in tags.values()]
    assert untouched and all(line["gpu_s"] == 0 and line["gpu_launches"] == 0 for line in untouched)

    functions = {f["qualname"]: f for f in profile["files"][TRUTH]["functions"]}
    assert (functions["matmuls"]["gpu_s"], functions["matmuls"]["gpu_launches"]) == (0.03, 10)
    assert (functions["copies"]["gpu_s"], functions["copies"]["gpu_copy_bytes"]) == (
        0.000527,
        (1 << 20) + 4096,
    )
    assert (functions["worker"]["gpu_s"], functions["worker"]["gpu_launches"]) == (0.007, 6)

    gpu = profile["gpu"]
    assert gpu["enabled"] and gpu["kernel_tracing"]
    assert gpu["gpu_s"] == 0.037527 and gpu["unattributed_gpu_s"] == 0.0
    assert gpu["launches"] == 19
    assert (gpu["copy_h2d_bytes"], gpu["copy_d2h_bytes"]) == (1 << 20, 4096)
    assert gpu["alloc_peak_bytes"] == 256 << 20
    assert (gpu["alloc_peak_at"]["file"], gpu["alloc_peak_at"]["line"]) == (TRUTH, tags["alloc"])
    top = gpu["kernels"][0]
    assert (top["name"], top["raw_name"], top["calls"], top["gpu_s"]) == (
        "matmul(float const*, float const*, float*, int)", "_Z6matmulPKfS0_Pfi", 11, 0.032
    )
    assert [(k["file"], k["line"], k["calls"], k["gpu_s"]) for k in top["lines"]] == [
        (TRUTH, tags["matmul"], 10, 0.03), (TRUTH, tags["thread_matmul"], 1, 0.002)
    ]
    (device,) = gpu["devices"]
    assert device["peak_memory_used_bytes"] == 3 << 30
    assert {v for _, v in device["utilisation_timeline"]} >= {40, 80}
    assert 0 < device["idle_share"] < 1 and 0 < device["utilisation_pct"] < 80
    # (The host's steal time is the machine's, not this run's doing: not checked here.)
    assert [w for w in profile["warnings"] if not w.startswith("the hypervisor took")] == []


def test_terminal_report_has_a_gpu_section(fakes):
    done = heatline(fakes, "--gpu", COLUMNS="160")
    assert done.returncode == 0, done.stderr
    report = done.stderr
    tags = tagged_lines()
    assert "GPU 0 (Fake GPU 0)" in report
    assert "GPU work by launching line" in report and "Top kernels" in report
    assert "matmul(float const*, float const*, float*, int)" in report
    row = next(
        line
        for line in report.splitlines()
        if f"gpu_truth.py:{tags['matmul']}" in line and "fake_launch" in line
    )
    assert row.split()[1:3] == ["30", "10"]  # ms, launches


def test_no_gpu_leaves_the_profile_without_gpu_data(fakes, tmp_path):
    profile, report = profiled(fakes, tmp_path, "--no-gpu", HEATLINE_GPU_PROFILED="")
    assert profile["gpu"] == {"enabled": False}
    assert all(line["gpu_launches"] == 0 for line in truth_lines(profile).values())
    # No GPU section, nor a GPU figure anywhere (the program's source, shown whole, may say GPU).
    # (A word, not a prefix: a wrapped source line may start with "GPU_PROFILED".)
    assert not [row for row in report.splitlines()
                if re.match(r"GPU\b", row.strip()) or "GPU ms" in row or "GPU time" in row], report


def test_cupti_unavailable_is_a_warning_and_the_program_is_unaffected(fakes, tmp_path):
    missing = "/nonexistent/libcupti.so"
    plain = subprocess.run(
        [sys.executable, TRUTH],
        env=gpu_env(fakes, HEATLINE_GPU_PROFILED=""),
        capture_output=True,
        text=True,
        timeout=120,
    )
    profile, report = profiled(fakes, tmp_path, "--gpu", HEATLINE_CUPTI_LIBRARY=missing)
    assert plain.returncode == 0 and plain.stdout == "done\n"
    assert profile["gpu"]["enabled"] and not profile["gpu"]["kernel_tracing"]
    assert profile["gpu"]["devices"][0]["peak_memory_used_bytes"] == 3 << 30
    (warning,) = profile["warnings"]
    assert "CUPTI could not be loaded" in warning and missing in warning
    assert "warning: GPU kernel tracing is off" in report


def test_forked_child_launching_work_is_not_profiled_and_runs_normally(fakes, tmp_path):
    program = tmp_path / "fork_launch.py"
    program.write_text(
        "import ctypes, os\n"
        "cupti = ctypes.CDLL(os.environ['FAKE_CUPTI_PATH'])\n"
        "cupti.fake_launch.argtypes = [ctypes.c_char_p, ctypes.c_uint64]\n"
        "cupti.fake_launch(b'parent_kernel', 1000)\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    cupti.fake_launch(b'child_kernel', 5000)\n"
        "    cupti.fake_deliver(0)\n"
        "    os._exit(7)\n"
        "_, status = os.waitpid(pid, 0)\n"
        "print('child', os.waitstatus_to_exitcode(status)"
        " if hasattr(os, 'waitstatus_to_exitcode') else status >> 8)\n"
    )
    out = tmp_path / "profile.json"
    done = heatline(fakes, "--gpu", "-o", str(out), program=str(program), HEATLINE_GPU_PROFILED="")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "child 7\n"
    with open(out, encoding="utf-8") as f:
        kernels = {k["name"]: k for k in json.load(f)["gpu"]["kernels"]}
    assert set(kernels) == {"parent_kernel"} and kernels["parent_kernel"]["gpu_s"] == 0.000001

