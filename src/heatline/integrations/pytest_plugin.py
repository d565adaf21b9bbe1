"""heatline's pytest plugin (entry point ``pytest11``; inactive unless asked).

- ``pytest --heatline[=DIR]`` (with ``=``: a bare ``--heatline`` takes no value) profiles each
  test's call (not its fixtures) and writes one profile per test, ``DIR/<test id>.json``
  (DIR: ``.heatline`` in the directory pytest was started from); ``heatline view`` shows them.
- ``@pytest.mark.heatline_limit(peak="200 MiB", leaks=0, time_s=2.5)`` profiles that test (with
  or without --heatline) and fails it when it goes over a budget, naming the lines
  responsible: ``peak`` is the most memory allocated during the test and alive at once (sizes
  as heatline.units reads them: binary units, "200 MB" is 200 MiB); ``leaks`` is the number of
  lines flagged as likely leaks (an int), or the most memory allocated during the test that may
  still be alive at its end (a size); ``time_s`` the test's wall time in seconds (or "2m").

Importing this module (pytest does for every run where heatline is installed) imports nothing
of heatline's engine; a test is profiled only when one of the above asks for it.
"""

from __future__ import annotations

import copy
import hashlib
import os
import re
from typing import Any

import pytest

from heatline.units import format_size, parse_seconds, parse_size

DEFAULT_DIR = ".heatline"
MARKER = "heatline_limit"
_BLAME = 3  # lines named per breach
_LIMITS = ("peak", "leaks", "time_s")


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("heatline", "profiling with heatline")
    group.addoption(
        "--heatline", nargs="?", const=DEFAULT_DIR, default=None, metavar="DIR",
        help=f"profile each test with heatline and write DIR/<test>.json (default DIR: "
        f"{DEFAULT_DIR})",
    )


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: Any, parser: Any, args: list[str]) -> None:
    """A bare ``--heatline`` takes no value (``pytest --heatline tests/`` must not write to
    tests/): it becomes ``--heatline=.heatline`` before pytest's final parse of ``args``."""
    if "--heatline" not in args:
        return
    end = args.index("--") if "--" in args else len(args)
    args[:end] = [f"--heatline={DEFAULT_DIR}" if arg == "--heatline" else arg
                  for arg in args[:end]]
    early_config.known_args_namespace = parser.parse_known_args(
        args, namespace=copy.copy(early_config.option)
    )


def pytest_configure(config: Any) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(peak=None, leaks=None, time_s=None): profile the test with heatline and fail "
        "it when its peak memory (e.g. '200 MiB'), likely leaks (a count, or a size left alive) "
        "or wall time (seconds) exceed the limit, naming the lines responsible",
    )


def _limits(marker: Any) -> dict[str, Any]:
    if marker.args:
        pytest.fail(f"{MARKER} takes keywords only: peak=, leaks=, time_s=", pytrace=False)
    unknown = sorted(set(marker.kwargs) - set(_LIMITS))
    if unknown:
        raise pytest.UsageError(f"{MARKER}: unknown limit {', '.join(unknown)} (peak, leaks, "
                                "time_s)")
    limits: dict[str, Any] = {}
    try:
        if marker.kwargs.get("peak") is not None:
            limits["peak"] = parse_size(marker.kwargs["peak"])
        if marker.kwargs.get("time_s") is not None:
            limits["time_s"] = parse_seconds(marker.kwargs["time_s"])
        leaks = marker.kwargs.get("leaks")
        if isinstance(leaks, int) and not isinstance(leaks, bool):
            if leaks < 0:
                raise ValueError(f"a count of 0 or more, not {leaks!r}")
            limits["leak_lines"] = leaks
        elif leaks is not None:
            limits["leak_bytes"] = parse_size(leaks)
    except ValueError as exc:
        pytest.fail(f"{MARKER}: must be {exc}", pytrace=False)
    return limits


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: Any) -> Any:
    directory = item.config.getoption("heatline")
    marker = item.get_closest_marker(MARKER)
    if directory is None and marker is None:
        yield
        return
    limits = _limits(marker) if marker is not None else {}
    from heatline import api

    try:
        api.start_with_options(api.options_from_keywords({}), program=_test_label(item))
    except api.HeatlineError as exc:  # e.g. pytest itself runs under the heatline command
        item.stash[_BREACHES] = [f"cannot profile this test: {exc}"] if limits else []
        if not limits:
            item.warn(pytest.PytestWarning(f"heatline: cannot profile this test: {exc}"))
        yield
        return
    try:
        yield
    finally:
        profile = api.stop()
    if directory is not None:
        base = os.path.join(str(item.config.invocation_params.dir), directory)
        os.makedirs(base, exist_ok=True)
        path = os.path.join(base, _file_name(item.nodeid))
        profile.save(path)
        item.config.stash.setdefault(_WRITTEN, []).append(path)
    if limits:
        item.stash[_BREACHES] = _breaches(profile, limits, str(item.config.rootpath))


_BREACHES = pytest.StashKey[list]()
_WRITTEN = pytest.StashKey[list]()  # the profile files --heatline wrote, in test order


def pytest_terminal_summary(terminalreporter: Any, exitstatus: Any, config: Any) -> None:
    """Where --heatline's profiles went, and how to look at one."""
    written = config.stash.get(_WRITTEN, [])
    if not written:
        return
    first = written[0]
    if first.startswith(os.getcwd() + os.sep):
        first = os.path.relpath(first)
    count = f"{len(written)} profile" + ("" if len(written) == 1 else "s")
    terminalreporter.write_sep("-", "heatline")
    terminalreporter.write_line(f"heatline: {count} written to {os.path.dirname(first)}{os.sep} "
                                f"(one per test); see one with: heatline view {first}")


def _test_label(item: Any) -> str:
    """The profile's "program": the test's file, absolute (the report shows paths relative to
    its directory), and its name within the file, as pytest writes it ("file.py::test_x")."""
    name = item.nodeid.split("::", 1)[1] if "::" in item.nodeid else item.name
    return f"{item.path}::{name}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: Any, call: Any) -> Any:
    outcome = yield
    if call.when != "call":
        return
    breaches = item.stash.get(_BREACHES, None)
    report = outcome.get_result()
    if breaches and report.passed:
        report.outcome = "failed"
        report.longrepr = "\n".join(f"{MARKER}: {breach}" for breach in breaches)


def _file_name(nodeid: str) -> str:
    """A file name for a test id, unique (a short hash of the id) and readable."""
    name = re.sub(r"[^\w.-]+", "_", nodeid).strip("_")[:150]
    return f"{name}-{hashlib.sha1(nodeid.encode()).hexdigest()[:8]}.json"


def _where(line: Any, root: str) -> str:
    path = line.file
    if path.startswith(root.rstrip(os.sep) + os.sep):
        path = os.path.relpath(path, root)
    return f"{path}:{line.line} ({line.function})" if line.function else f"{path}:{line.line}"


def _blame(lines: list[Any], key: str, describe: Any, root: str) -> str:
    """The lines with the most of ``key``, most first: "file:line (function) <describe>"."""
    top = sorted((line for line in lines if getattr(line, key)), key=lambda x: -getattr(x, key))
    text = ", ".join(f"{_where(line, root)} {describe(getattr(line, key))}"
                     for line in top[:_BLAME])
    return text or "no line of yours"


def _breaches(profile: Any, limits: dict[str, Any], root: str) -> list[str]:
    """One sentence per limit exceeded, naming the lines responsible."""
    found = []
    lines = profile.lines()
    if "peak" in limits and profile.peak_bytes > limits["peak"]:
        blame = _blame(lines, "peak_bytes", lambda v: f"held {format_size(v)}", root)
        found.append(f"peak memory {format_size(profile.peak_bytes)} is over the limit of "
                     f"{format_size(limits['peak'])}; most held by {blame}")
    if "time_s" in limits and profile.elapsed_s > limits["time_s"]:
        blame = _blame(lines, "time_s", lambda v: f"{v:.2f} s", root)
        found.append(f"the test took {profile.elapsed_s:.2f} s, over the limit of "
                     f"{limits['time_s']:g} s; most time in {blame}")
    leaks = profile.leaks()
    if "leak_lines" in limits and len(leaks) > limits["leak_lines"]:
        blame = _blame(leaks, "growth_bytes", lambda v: f"grew {format_size(v)}", root)
        found.append(f"{len(leaks)} likely leak(s), over the limit of {limits['leak_lines']}: "
                     f"{blame}")
    alive = int(profile.data["memory"].get("live_bytes_at_end", 0))
    if "leak_bytes" in limits and alive > limits["leak_bytes"]:
        blame = _blame(lines, "growth_bytes", lambda v: f"kept {format_size(v)}", root)
        found.append(f"{format_size(alive)} allocated during the test is still alive at its "
                     f"end, over the limit of {format_size(limits['leak_bytes'])}; kept by "
                     f"{blame}")
    return found
