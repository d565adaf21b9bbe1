"""Fixtures for the GPU tests: the fake NVML and CUPTI libraries, built once per run."""

import os
import shutil
import subprocess

import pytest
from gpu_support import HERE, NATIVE


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

