"""Every sampled block's free is seen, whichever allocator CPython runs with
(tests/integration/test_memory_frees.py).

Three lines build small objects (ints of two digits, 32-byte requests; strs of 50 to 529
bytes, on both sides of pymalloc's 512) and grow a bytearray byte by byte (reallocs, from pool
blocks into blocks above 512 bytes), all kept until the function returns and drops them. So each
line's growth (allocated minus freed) is exactly 0 when the free of every block the hooks
sampled was seen, and one window (or more) for each one that was missed. The list and the
bytearray objects are made on other lines (a free list may keep a list object, unfreed), and
nothing on the three lines is a tuple or a float (free lists too).

heatline hooks the MEM and OBJ frees under every allocator. Printed (JSON): the file each
domain's installed free function lives in (dladdr), so the test can tell that it is
heatline's.
"""

import ctypes
import json

COUNT = 40_000


class _Allocator(ctypes.Structure):
    _fields_ = [(name, ctypes.c_void_p) for name in ("ctx", "malloc", "calloc", "realloc", "free")]


class _DlInfo(ctypes.Structure):
    _fields_ = [("fname", ctypes.c_char_p), ("fbase", ctypes.c_void_p),
                ("sname", ctypes.c_char_p), ("saddr", ctypes.c_void_p)]


def free_function_file(domain):
    """The file of the free function installed for a PyMemAllocatorDomain (1 MEM, 2 OBJ)."""
    get = ctypes.pythonapi.PyMem_GetAllocator
    get.argtypes = [ctypes.c_int, ctypes.POINTER(_Allocator)]
    get.restype = None
    allocator = _Allocator()
    get(domain, ctypes.byref(allocator))
    dladdr = ctypes.CDLL(None).dladdr
    dladdr.argtypes = [ctypes.c_void_p, ctypes.POINTER(_DlInfo)]
    info = _DlInfo()
    if not dladdr(allocator.free, ctypes.byref(info)) or not info.fname:
        return None
    return info.fname.decode()


def build_and_drop():
    kept = []  # the list object
    grown = bytearray()
    for i in range(COUNT):
        kept.append(i << 40)  # small-blocks: ints
        kept.append(str(i % 10) * (i % 480 + 1))  # small-blocks: strs
        grown.append(i & 255)  # small-blocks: reallocs
    return len(kept) + len(grown)


for _ in range(5):
    build_and_drop()
print(json.dumps({"mem_free": free_function_file(1), "obj_free": free_function_file(2)}))
