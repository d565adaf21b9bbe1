"""Whether heatline's Python allocator hook is installed, in this process and in a child of
os.fork(): the object allocator's malloc (PyMem_GetAllocator) lies in heatline's _native
library, read from /proc/self/maps. Prints {"parent": bool, "fork child": bool}."""

import ctypes
import json
import os

PYMEM_DOMAIN_OBJ = 2


class Allocator(ctypes.Structure):
    _fields_ = [(name, ctypes.c_void_p) for name in ("ctx", "malloc", "calloc", "realloc", "free")]


def hooked():
    allocator = Allocator()
    ctypes.pythonapi.PyMem_GetAllocator(ctypes.c_int(PYMEM_DOMAIN_OBJ), ctypes.byref(allocator))
    with open("/proc/self/maps") as f:
        for line in f:
            fields = line.split()
            if len(fields) < 6 or "heatline" not in fields[5] or "_native" not in fields[5]:
                continue
            start, end = (int(x, 16) for x in fields[0].split("-"))
            if start <= allocator.malloc < end:
                return True
    return False


if __name__ == "__main__":
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.write(write, json.dumps(hooked()).encode())
        os._exit(0)
    os.close(write)
    child = json.loads(os.read(read, 100))
    os.waitpid(pid, 0)
    print(json.dumps({"parent": hooked(), "fork child": child}))
