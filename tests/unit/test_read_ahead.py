"""The sampler's read-ahead (frames.c) reads a stack's code object headers in one system call
(memread.c, hl_memread_batch). The kernel stops at the first piece it cannot read; what follows
must still be read, and nothing unreadable may pass for read. (The walks that use it, over
stacks of 1 to 400 frames and 300 distinct functions, are test_engine.py's and
test_engine_deep_stacks.py's.)"""

import ctypes
import mmap
import os

from heatline import _native

PAGE = mmap.PAGESIZE


def _libc():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                          ctypes.c_int, ctypes.c_long]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    return libc


def test_pieces_after_an_unreadable_one_are_read_and_none_is_read_in_part():
    libc = _libc()
    base = libc.mmap(None, 3 * PAGE, mmap.PROT_READ | mmap.PROT_WRITE,
                     mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1, 0)
    assert base not in (None, ctypes.c_void_p(-1).value)
    try:
        content = bytes(range(256)) * (3 * PAGE // 256)
        ctypes.memmove(base, content, len(content))
        assert libc.munmap(base + PAGE, PAGE) == 0  # a hole in the middle
        pieces = [
            (base, 100),                 # readable
            (base + PAGE, 50),           # in the hole
            (base + 2 * PAGE, 100),      # readable, after the hole: read with a second call
            (base + PAGE - 20, 40),      # runs from the first page into the hole
            (base + 2 * PAGE + 200, 16),  # readable again
            (base + 2 * PAGE + 300, 1),
        ]
        got = _native._read_pieces(os.getpid(), pieces)
        expected = [content[address - base:address - base + length]
                    for address, length in pieces]
        assert got == [expected[0], None, expected[2], None, expected[4], expected[5]]
        # All readable, or all not: one call each way.
        assert _native._read_pieces(os.getpid(), [pieces[0], pieces[2]]) == [
            expected[0], expected[2]]
        assert _native._read_pieces(os.getpid(), [pieces[1], pieces[3]]) == [None, None]
    finally:
        libc.munmap(base, 3 * PAGE)


