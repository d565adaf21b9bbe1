"""Helpers shared by the GPU tests (a module of its own: every test directory has a conftest)."""

import os

HERE = os.path.dirname(os.path.abspath(__file__))
NATIVE = os.path.join(os.path.dirname(os.path.dirname(HERE)), "src", "heatline", "_native")
TRUTH = os.path.join(HERE, "gpu_truth.py")


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
