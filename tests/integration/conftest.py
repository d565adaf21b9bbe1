"""Fixtures for the end-to-end tests: run a program under heatline and under plain python."""

import os
import subprocess
import sys

import pytest

PROGRAMS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "targets")


def _run(command, *, env=None, timeout=60, **kwargs):
    full_env = dict(os.environ)
    # Colour and width must not depend on the terminal the tests run in.
    for name in ("FORCE_COLOR", "NO_COLOR", "COLUMNS", "LINES"):
        full_env.pop(name, None)
    full_env.update(env or {})
    return subprocess.run(
        command, check=False, capture_output=True, env=full_env, timeout=timeout, **kwargs
    )


@pytest.fixture
def run_heatline():
    """run_heatline(*args, **subprocess_kwargs): `python -m heatline ARGS`, output as bytes
    unless text=True."""
    return lambda *args, **kwargs: _run([sys.executable, "-m", "heatline", *args], **kwargs)


@pytest.fixture
def run_python():
    """run_python(*args, **subprocess_kwargs): plain `python ARGS`, to compare with."""
    return lambda *args, **kwargs: _run([sys.executable, *args], **kwargs)


@pytest.fixture
def program():
    """program(name): the path of a helper program in tests/targets."""
    return lambda name: os.path.join(PROGRAMS, name)


@pytest.fixture
def profile_path(tmp_path):
    return str(tmp_path / "profile.json")
