"""What memory means for mappings: an accessible anonymous mapping is
allocated memory (counted whole, touched or not, like malloc'd memory); a reservation
(PROT_NONE, or MAP_NORESERVE) is not, and must not show up as a peak."""

import json

import pytest

MAPPINGS = r"""
import mmap, sys

NORESERVE = 0x4000  # MAP_NORESERVE on Linux
GiB = 1 << 30
PRIVATE = mmap.MAP_PRIVATE

kind = sys.argv[1]
if kind == "reserve":
    reserved = mmap.mmap(-1, 64 * GiB, flags=PRIVATE | NORESERVE, prot=0)
elif kind == "reserve-prot-none":
    reserved = mmap.mmap(-1, 16 * GiB, flags=PRIVATE, prot=0)
elif kind == "noreserve-rw":
    reserved = mmap.mmap(-1, 16 * GiB, flags=PRIVATE | NORESERVE)
held = mmap.mmap(-1, 64 << 20, flags=PRIVATE)  # accessible: counted, touched or not
held[:4096] = b"x" * 4096
held.close()
reserved.close()
print("ok")
"""


@pytest.mark.parametrize("kind", ["reserve", "reserve-prot-none", "noreserve-rw"])
def test_reservations_are_not_memory_but_accessible_mappings_are(
    run_heatline, tmp_path, profile_path, kind
):
    script = tmp_path / "mappings.py"
    script.write_text(MAPPINGS)
    result = run_heatline(
        "-q", "-o", profile_path, "--memory-sampling-window", "1M", str(script), kind, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == b"ok\n"
    with open(profile_path, encoding="utf-8") as handle:
        profile = json.load(handle)
    peak = profile["peak_bytes"]
    # The 64 MiB accessible mapping is the peak; the 16-64 GiB reservation is not memory.
    assert peak >= 60 << 20, peak
    assert peak < 1 << 30, peak
