"""Fixtures for the end-to-end tests: run a program under heatline and under plain python."""

import json
import os
import subprocess
import sys

import pytest

from heatline.data import io, model

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
    def run(*args, **kwargs):
        result = _run([sys.executable, "-m", "heatline", *args], **kwargs)
        _check_profile_written(args, kwargs.get("cwd"))
        return result

    return run


# Suffixes -o writes in another format than the profile's JSON (cli/run.py's list).
_OTHER_FORMATS = (".html", ".pb.gz", ".speedscope.json", ".collapsed", ".trace.json",
                  ".otlp.pb")


def _check_profile_written(args, cwd):
    """The profile a run_heatline call wrote with -o (a run, attach, or view --format json)
    must match data/model.py exactly: one that does not fails the test. Files of other
    formats, and a profile file the call did not write, are left alone."""
    args = [str(arg) for arg in args]
    formats = [args[i + 1] for i, arg in enumerate(args[:-1]) if arg == "--format"]
    if any(fmt != "json" for fmt in formats) or "--html" in args:
        return
    outputs = [args[i + 1] for i, arg in enumerate(args[:-1]) if arg in ("-o", "--outfile")]
    outputs += [arg.split("=", 1)[1] for arg in args if arg.startswith("--outfile=")]
    for output in outputs[:1]:
        if not formats and output.endswith(_OTHER_FORMATS):
            return
        path = os.path.join(cwd or os.getcwd(), output)
        if not os.path.isfile(path):  # not written, or a device (-o /dev/full)
            return
        try:
            with open(path, "rb") as file:
                text = file.read()
        except OSError:
            return
        if not text.startswith(b'{"schema_version":'):
            return
        problems = model.mismatches(json.loads(text))
        if problems:
            pytest.fail(f"the profile {output} does not match heatline/data/model.py:\n"
                        + "\n".join(problems), pytrace=False)


@pytest.fixture(autouse=True)
def _written_profiles_match_the_model(request, tmp_path_factory, monkeypatch):
    """Every profile heatline writes during a test (any process: runs, children, attach
    targets, view --format json) is held against data/model.py by heatline itself, in the
    self-check mode HEATLINE_MODEL_CHECK turns on (data/io.py); a mismatch fails the test.
    A test that writes malformed profiles on purpose sets ``model_check = False`` in its
    module."""
    if getattr(request.module, "model_check", True) is False:
        yield
        return
    log = tmp_path_factory.mktemp("model-check") / "mismatches.log"
    monkeypatch.setenv(io.MODEL_CHECK_ENV, str(log))
    yield
    if log.exists() and log.read_text(encoding="utf-8"):
        pytest.fail("profiles written that do not match heatline/data/model.py:\n"
                    + log.read_text(encoding="utf-8"), pytrace=False)


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
