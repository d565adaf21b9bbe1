"""pymalloc's own bookkeeping is not the program's native memory
(tests/integration/test_memory_frees.py).

One line keeps about 48 MiB of small blocks (bytes objects of 400 bytes, 433 with the
header, from PyObject_Malloc: each a pool block) and another drops them. pymalloc gets its
pools from arenas (1 MiB from 3.10, 256 KiB before) and lists its arenas in a table of
16 x 2^k entries of 48 bytes, grown with PyMem_RawRealloc when every entry is in use (and,
from 3.10, a radix tree of arena addresses grown with PyMem_RawCalloc): so an allocation that
is no more than a pool block, and not sampled, calls the RAW domain on the line that needs
the arena, for memory pymalloc never frees. Those calls are the allocator's and must not be
counted as the line's native memory; a heatline that did would show native bytes on the line,
never freed: growth on a line that frees all it allocates.

Printed (JSON): pymalloc's high-water mark of arenas before and after the line, from
sys._debugmallocstats, so the test can tell that the table grew while the line ran; null where
pymalloc is not the allocator installed (CPython prints its statistics only then: not under
heatline's hooks or tracemalloc's), so the test reads it from a run under plain python.
"""

import json
import os
import re
import sys
import tempfile

MIB = 1024 * 1024
UNIT, SIZE = b"x", 400  # a new object each time (b"x" * 400 would be one folded constant)
COUNT = 48 * MIB // 448  # blocks of the 448-byte size class


def arenas_highwater():
    """pymalloc's "# arenas highwater mark", which sys._debugmallocstats writes to fd 2, or
    None."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as caught:
        os.dup2(caught.fileno(), 2)
        try:
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        caught.seek(0)
        text = caught.read().decode()
    found = re.search(r"# arenas highwater mark\s*=\s*([\d,]+)", text)
    return int(found.group(1).replace(",", "")) if found else None


def keep(count):
    kept = [UNIT * SIZE for _ in range(count)]  # arena-growth
    return kept


before = arenas_highwater()
blocks = keep(COUNT)
after = arenas_highwater()
del blocks
print(json.dumps({"highwater_before": before, "highwater_after": after}))
