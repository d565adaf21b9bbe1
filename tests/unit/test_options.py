"""One name, one default and one valid range per quantity, from the command line to the engine:
the engine refuses exactly what heatline/options.py's parsers refuse at the edges of each range,
and the command line, the Session and the engine's start() use the same names."""

import inspect

import pytest

from heatline import _native, options
from heatline.engine.session import Session
from heatline.options import RUN_OPTIONS, Options

# Nothing checked here depends on the CPython version: runs on the main CPython and under ASan,
# not on every version (Makefile, suite-3.X).
pytestmark = pytest.mark.interpreter_independent


def _engine_refuses(**arguments):
    """Whether _native.start refuses these arguments (it checks them before starting)."""
    arguments.setdefault("sampling_interval_s", options.DEFAULT_SAMPLING_INTERVAL_S)
    interval = arguments.pop("sampling_interval_s")
    try:
        _native.start(interval, exclude_prefixes=[], **arguments)
    except ValueError:
        return True
    _native.stop()
    return False


def _parser_refuses(parse, value):
    try:
        parse(str(value))
    except Exception:  # noqa: BLE001 -- argparse.ArgumentTypeError
        return True
    return False


@pytest.mark.parametrize("value", [0.0, -0.01, 1e-9, 0.5, 1.0, 1.0001, 2.0, 10.0])
def test_the_sampling_interval_range_is_the_same_in_the_parser_and_the_engine(value):
    assert _parser_refuses(options._interval, value) == _engine_refuses(sampling_interval_s=value)


@pytest.mark.parametrize("value", [32, 63, 64, 65536, 1 << 30, (1 << 30) + 1])
def test_the_memory_window_range_is_the_same_in_the_parser_and_the_engine(value):
    assert _parser_refuses(options._window, value) == _engine_refuses(
        memory_sampling_window_bytes=value)


@pytest.mark.parametrize("value", [0.5, 1e6, 1e6 + 1, 1e7])
def test_the_write_interval_range_is_the_same_in_the_parser_and_the_engine(value):
    try:
        _native._set_periodic(value, None)
        engine_refuses = False
    except ValueError:
        engine_refuses = True
    assert _parser_refuses(options._seconds, value) == engine_refuses


def test_each_quantity_has_one_name_from_the_command_line_to_the_engine():
    by_flag = {flag: option for option in RUN_OPTIONS for flag in option.flags}
    assert by_flag["--sampling-interval"].dest == "sampling_interval_s"
    assert by_flag["--memory-sampling-window"].dest == "memory_sampling_window_bytes"
    assert by_flag["--cpu-percent-threshold"].dest == "threshold_pct"
    assert by_flag["--write-interval"].dest == "write_interval_s"
    session_arguments = Options().session_arguments()
    session_parameters = inspect.signature(Session).parameters
    for name in ("sampling_interval_s", "memory_sampling_window_bytes"):
        assert name in session_arguments and name in session_parameters
        assert name in _native.start.__text_signature__
    assert "write_interval_s" in _native._set_periodic.__text_signature__


def test_each_default_is_declared_once():
    assert Options().sampling_interval_s == options.DEFAULT_SAMPLING_INTERVAL_S
    assert Options().memory_sampling_window_bytes == options.DEFAULT_MEMORY_SAMPLING_WINDOW_BYTES
    assert Options().threshold_pct == options.DEFAULT_THRESHOLD_PCT
    # The engine's Session takes it from options when not given (options is not imported on a
    # child's start path: engine/session.py).
    assert (Session(program="p", argv=[]).sampling_interval_s
            is options.DEFAULT_SAMPLING_INTERVAL_S)
