"""Fixtures for the GPU tests: the fake NVML and CUPTI libraries, built once per run."""

import os
import shutil
import subprocess

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
NATIVE = os.path.join(os.path.dirname(os.path.dirname(HERE)), "src", "heatline", "_native")
TRUTH = os.path.join(HERE, "gpu_truth.py")


@pytest.fixture(scope="session")
def fakes(tmp_path_factory):
    """{"nvml": path, "cupti": path} of the fake libraries, compiled with gcc."""
    compiler = shutil.which("gcc") or shutil.which("cc")
    if compiler is None:
        pytest.skip("needs a C compiler for the fake GPU libraries")
    out = tmp_path_factory.mktemp("fakegpu")
    paths = {}
    for name in ("nvml", "cupti"):
        paths[name] = str(out / f"fake_{name}.so")
        subprocess.run(
            [compiler, "-O1", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC", "-pthread",
             "-I", NATIVE, "-o", paths[name], os.path.join(HERE, f"fake_{name}.c")],
            check=True,
        )
    return paths


def tagged_lines(path=TRUTH):
    """{tag: line number} of the `# L:tag` markers in a program."""
    tags = {}
    with open(path, encoding="utf-8") as f:
        for number, text in enumerate(f, 1):
            if "# L:" in text:
                tags[text.split("# L:")[1].strip()] = number
    return tags


def gpu_env(fakes, **extra):
    """The environment that points heatline (and the truth program) at the fakes."""
    env = dict(os.environ)
    for name in ("FORCE_COLOR", "NO_COLOR", "COLUMNS", "LINES", "FAKE_CUPTI_TAKEN"):
        env.pop(name, None)
    env.update(
        HEATLINE_NVML_LIBRARY=fakes["nvml"],
        HEATLINE_CUPTI_LIBRARY=fakes["cupti"],
        HEATLINE_GPU_PROFILED="1",
        FAKE_NVML_PATH=fakes["nvml"],  # what the truth program loads, whatever heatline loads
        FAKE_CUPTI_PATH=fakes["cupti"],
    )
    env.update(extra)
    return env
