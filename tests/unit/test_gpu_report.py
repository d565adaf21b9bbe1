"""data/gpu.py: the GPU fields of the profile from synthetic engine snapshots."""

import pytest
import test_profile
from test_profile import MS, build, snapshot

from heatline import data as profile_module

# Nothing checked here depends on the CPython version: runs on the main CPython and under ASan,
# not on every version (Makefile, suite-3.X).
pytestmark = pytest.mark.interpreter_independent


def gpu_part(**overrides):
    gpu = {
        "enabled": True,
        "kernel_tracing": True,
        "warnings": [],
        "devices": [
            {
                "index": 0,
                "name": "G",
                "memory_total_bytes": 100,
                "samples": 4,
                "utilisation_pct_sum": 150,
                "idle_samples": 1,
                "peak_memory_used_bytes": 60,
                "peak_memory_t_ns": 20 * MS,
                "utilisation_timeline": [[0, 0], [10 * MS, 50]],
                "memory_timeline": [[0, 10], [20 * MS, 60]],
            }
        ],
        "lines": [],
        "kernels": [],
        "records": 0,
        "unattributed_gpu_ns": 0,
        "unmatched_records": 0,
        "dropped_records": 0,
        "alloc_peak_bytes": 0,
        "alloc_peak_at": None,
    }
    gpu.update(overrides)
    return gpu


def line(key, gpu_ns, launches=1, h2d=0, d2h=0, other=0, alloc=0):
    return {"line": key, "gpu_ns": gpu_ns, "gpu_launches": launches, "gpu_copy_h2d_bytes": h2d,
            "gpu_copy_d2h_bytes": d2h, "gpu_copy_other_bytes": other, "gpu_alloc_bytes": alloc}


def test_lines_functions_and_totals_get_the_gpu_figures():
    gpu = gpu_part(
        lines=[
            line((0, 4, 0), 7 * MS, launches=3, h2d=100, d2h=20, other=5),
            line((0, 5, 0), 2 * MS, alloc=4096),
        ],
        kernels=[
            {
                "raw_name": "_Zk",
                "name": "k()",
                "calls": 3,
                "gpu_ns": 7 * MS,
                "lines": [((0, 4, 0), 3, 7 * MS)],
                "other_lines_calls": 0,
                "other_lines_gpu_ns": 0,
            }
        ],
        unattributed_gpu_ns=1 * MS,
        alloc_peak_bytes=4096,
        alloc_peak_at={"file": 0, "line": 5, "t_ns": 5 * MS},
    )
    prof = build(snapshot(gpu=gpu))
    profile_module.validate(prof)
    lines = {item["line"]: item for item in prof["files"]["/src/app.py"]["lines"]}
    assert (
        lines[4]["gpu_s"],
        lines[4]["gpu_launches"],
        lines[4]["gpu_copy_bytes"],
        lines[4]["gpu_copy_h2d_bytes"],
        lines[4]["gpu_copy_d2h_bytes"],
    ) == (0.007, 3, 125, 100, 20)
    assert (lines[5]["gpu_s"], lines[5]["gpu_alloc_bytes"]) == (0.002, 4096)
    main = next(f for f in prof["files"]["/src/app.py"]["functions"] if f["qualname"] == "main")
    assert (main["gpu_s"], main["gpu_launches"], main["gpu_alloc_bytes"]) == (0.009, 4, 4096)
    work = prof["files"]["/src/work.py"]
    assert all(item["gpu_s"] == 0 and item["gpu_launches"] == 0 for item in work["lines"])
    top = prof["gpu"]
    assert (top["gpu_s"], top["unattributed_gpu_s"], top["launches"]) == (0.01, 0.001, 4)
    assert top["alloc_peak_at"] == {"file": "/src/app.py", "line": 5, "t_s": 0.005}
    assert top["kernels"] == [
        {
            "name": "k()",
            "raw_name": "_Zk",
            "calls": 3,
            "gpu_s": 0.007,
            "lines": [{"file": "/src/app.py", "line": 4, "calls": 3, "gpu_s": 0.007}],
            "other_lines_calls": 0,
            "other_lines_gpu_s": 0.0,
        }
    ]
    (device,) = top["devices"]
    assert (device["utilisation_pct"], device["idle_share"]) == (37.5, 0.25)
    assert device["memory_timeline"] == [[0.0, 10], [0.02, 60]]


def test_a_line_in_a_file_without_samples_is_listed_for_its_gpu_work():
    snap = snapshot(gpu=gpu_part(lines=[line((2, 3, 3), 5 * MS, launches=2)]))
    snap["files"].append({"path": "/src/gpuonly.py", "user": True})
    snap["functions"].append({"file": 2, "name": "step", "qualname": "step", "first_line": 2})
    sources = dict(
        test_profile.SOURCES, **{"/src/gpuonly.py": ["def step():", "    x = 1", "    launch()"]}
    )
    prof = build(snap, sources)
    profile_module.validate(prof)
    entry = prof["files"]["/src/gpuonly.py"]
    (only,) = entry["lines"]
    got = (only["line"], only["source"], only["gpu_s"], only["gpu_launches"], only["python_s"])
    assert got == (3, "    launch()", 0.005, 2, 0.0)
    (function,) = entry["functions"]
    assert (function["qualname"], function["gpu_s"], function["gpu_launches"]) == ("step", 0.005, 2)


def test_gpu_off_or_absent_gives_enabled_false_and_zero_fields():
    off = gpu_part(enabled=False, kernel_tracing=False, devices=[])
    for snap in (snapshot(), snapshot(gpu=off)):
        prof = build(snap)
        assert prof["gpu"] == {"enabled": False}
        assert all(item["gpu_launches"] == 0 for f in prof["files"].values() for item in f["lines"])


def test_gpu_warnings_join_the_profile_warnings():
    gpu = gpu_part(kernel_tracing=False, warnings=["GPU kernel tracing is off: x"])
    prof = build(snapshot(gpu=gpu))
    assert prof["warnings"][-1] == "GPU kernel tracing is off: x"
    assert prof["gpu"]["kernel_tracing"] is False
