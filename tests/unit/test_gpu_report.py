"""profile/gpu.py: the GPU fields of the profile from synthetic engine snapshots."""

import test_profile
from test_profile import MS, build, snapshot

from heatline import profile as profile_module


def gpu_part(**overrides):
    gpu = {
        "nvml": True,
        "cupti": True,
        "warnings": [],
        "devices": [
            {
                "index": 0,
                "name": "G",
                "memory_total": 100,
                "samples": 4,
                "util_sum": 150,
                "idle_samples": 1,
                "used_peak": 60,
                "used_peak_t_ns": 20 * MS,
                "util_timeline": [(0, 0), (10 * MS, 50)],
                "used_timeline": [(0, 10), (20 * MS, 60)],
            }
        ],
        "lines": [],
        "kernels": [],
        "records": 0,
        "unmatched_ns": 0,
        "unmatched_records": 0,
        "dropped_records": 0,
        "alloc_peak": 0,
        "alloc_peak_t_ns": 0,
        "alloc_peak_line": None,
    }
    gpu.update(overrides)
    return gpu


def line(key, gpu_ns, launches=1, h2d=0, d2h=0, other=0, alloc=0):
    return {"line": key, "gpu_ns": gpu_ns, "launches": launches, "copy_h2d": h2d, "copy_d2h": d2h,
            "copy_other": other, "alloc": alloc}


def test_lines_functions_and_totals_get_the_gpu_figures():
    gpu = gpu_part(
        lines=[
            line((0, 4, 0), 7 * MS, launches=3, h2d=100, d2h=20, other=5),
            line((0, 5, 0), 2 * MS, alloc=4096),
        ],
        kernels=[
            {
                "name": "_Zk",
                "demangled": "k()",
                "calls": 3,
                "ns": 7 * MS,
                "lines": [((0, 4, 0), 3, 7 * MS)],
                "other_lines_calls": 0,
                "other_lines_ns": 0,
            }
        ],
        unmatched_ns=1 * MS,
        alloc_peak=4096,
        alloc_peak_t_ns=5 * MS,
        alloc_peak_line=(0, 5, 0),
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
    for snap in (snapshot(), snapshot(gpu=gpu_part(nvml=False, cupti=False, devices=[]))):
        prof = build(snap)
        assert prof["gpu"] == {"enabled": False}
        assert all(item["gpu_launches"] == 0 for f in prof["files"].values() for item in f["lines"])


def test_gpu_warnings_join_the_profile_warnings():
    prof = build(snapshot(gpu=gpu_part(cupti=False, warnings=["GPU kernel tracing is off: x"])))
    assert prof["warnings"][-1] == "GPU kernel tracing is off: x"
    assert prof["gpu"]["kernel_tracing"] is False
