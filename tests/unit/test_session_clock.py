"""A profile's times are seconds since its started_at (docs/profile-format.md): started_at is
time 0 of its timelines however long the session takes to get the engine going. Read before
that work (the engine's tables, the control files), which can take over 0.1 s on a loaded
machine, it would place a memory peak that long before the spike that made it."""

import datetime
import time

from heatline.engine import scope
from heatline.engine.session import Session


def _epoch(iso):
    return datetime.datetime.strptime(iso, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()


def test_the_peak_is_at_the_wall_time_it_happened(monkeypatch):
    real = scope.launcher_files_among

    def slow(paths):
        time.sleep(0.3)  # the work before the engine starts, as slow as a loaded machine made it
        return real(paths)

    monkeypatch.setattr(scope, "launcher_files_among", slow)
    session = Session(program=__file__, argv=[], memory_sampling_window_bytes=65536)
    begun = time.time()
    session.start()
    try:
        time.sleep(0.05)
        before = time.time()
        peak = bytearray(64 << 20)  # the peak, from this line
        after = time.time()
        del peak
    finally:
        session.stop()
        ended = time.time()
    profile = session.profile()
    peak_at = profile["peak_at"]
    assert peak_at is not None and peak_at["file"] == __file__, peak_at
    # started_at keeps milliseconds (truncated): the peak's wall time is known to within one.
    when = _epoch(profile["started_at"]) + peak_at["t_s"]
    assert before - 0.001 <= when <= after + 0.001, (before, when, after, profile["started_at"])
    # The span measured starts there too: the 0.3 s of set-up are not the program's time.
    elapsed_s = profile["elapsed_s"]
    assert elapsed_s <= ended - begun - 0.3 + 0.001, (elapsed_s, ended - begun)
