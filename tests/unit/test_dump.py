"""heatline dump's parts that need no target: the per-version layout table held against this
CPython's own headers (the suite run on each version checks each table)."""

from heatline import _native


def test_the_layout_table_of_this_version_matches_its_headers():
    """compat.c's table for this minor version (and, on 3.13, this process's own
    _Py_DebugOffsets applied over it) holds exactly the offsets of the headers heatline was built
    with: the table heatline dump uses for a target of this version is right."""
    assert _native._remote_layout_check() is None
