"""Prints the name CPython's test-only C API gives the memory allocators (CPython's own
test_cmd_line asks it under each PYTHONMALLOC and -X dev), here and in child interpreters started
with each of those settings; "no test C API" where this Python was built without it."""

import os
import subprocess
import sys

try:
    from _testinternalcapi import pymem_getallocatorsname  # 3.13+
except ImportError:
    try:
        from _testcapi import pymem_getallocatorsname
    except ImportError:
        print("no test C API")
        raise SystemExit(0) from None

SETTINGS = {
    "default": ([], None),
    "malloc": ([], "malloc"),
    "debug": ([], "debug"),
    "pymalloc": ([], "pymalloc"),
    "pymalloc_debug": ([], "pymalloc_debug"),
    "malloc_debug": ([], "malloc_debug"),
    "dev_mode": (["-X", "dev"], None),
}


def name():
    try:
        return pymem_getallocatorsname()
    except RuntimeError as exc:
        return f"RuntimeError: {exc}"


if sys.argv[1:] == ["child"]:
    print(name())
else:
    print("main", name())
    for label, (flags, allocator) in SETTINGS.items():
        env = {k: v for k, v in os.environ.items() if k != "PYTHONMALLOC"}
        if allocator is not None:
            env["PYTHONMALLOC"] = allocator
        child = subprocess.run([sys.executable, *flags, __file__, "child"], env=env,
                               stdout=subprocess.PIPE, check=True)
        print(label, child.stdout.decode().strip())
