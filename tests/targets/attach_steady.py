"""For heatline attach/detach cycles: deterministic work and output, then what a program can
see of itself at the end (threads, signal handlers, trace/profile functions, open descriptors,
CPython's allocators; at exit, its own atexit handler only), printed so a profiled run's output
can be compared byte for byte with a plain run's. argv: DIRECTORY. Runs until DIRECTORY/finish;
writes DIRECTORY/ready (its pid)."""

import atexit
import ctypes
import hashlib
import os
import signal
import sys
import threading
import time

from _attachable import allow_tracing, mark

DIRECTORY = sys.argv[1]



def allocators():
    """CPython's allocator functions for the raw, mem and object domains (PyMem_GetAllocator):
    what an attach replaces with heatline's hooks and must put back."""
    get = ctypes.pythonapi.PyMem_GetAllocator
    found = []
    for domain in range(3):
        table = (ctypes.c_void_p * 5)()  # PyMemAllocatorEx: ctx, malloc, calloc, realloc, free
        get(ctypes.c_int(domain), table)
        found.append(list(table))
    return found


allow_tracing()
allocators_at_start = allocators()
atexit.register(print, "at exit: the program's own handler, and no other")
digest = hashlib.sha256()
for i in range(2000):
    digest.update(str(i * i).encode())
print("work", digest.hexdigest()[:16], flush=True)
mark(DIRECTORY, "ready", str(os.getpid()))
blocks = []
while not os.path.exists(os.path.join(DIRECTORY, "finish")):
    blocks.append(bytes(1000))  # allocations while attached
    del blocks[:-100]
    sum(range(1000))
    time.sleep(0.001)
print("allocators as at the start", allocators() == allocators_at_start)
print("threads", sorted(t.name for t in threading.enumerate()))
print("native threads", len(os.listdir("/proc/self/task")))
print("signals", [signal.getsignal(s) for s in sorted(signal.valid_signals()) if s not in
                  (signal.SIGKILL, signal.SIGSTOP)])
print("trace", sys.gettrace(), sys.getprofile())
print("fds", sorted(os.listdir("/proc/self/fd")))
print("done", flush=True)
