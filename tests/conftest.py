import os
import subprocess
import sys

import pytest

TESTS = os.path.dirname(os.path.abspath(__file__))
TARGETS = os.path.join(TESTS, "targets")

# Under the sanitizer build everything runs several times slower; tests that compare timings
# scale their workloads with this.
SANITIZED = bool(os.environ.get("HEATLINE_SANITIZED"))


def run_heatline(args, *, env=None, timeout=300, **kwargs):
    """Runs `python -m heatline ARGS` and returns the CompletedProcess (text mode)."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "heatline", *args],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=timeout,
        **kwargs,
    )


@pytest.fixture
def heatline():
    return run_heatline
