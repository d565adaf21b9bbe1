"""Build definition for the C engine (heatline._native).

Everything else about the package lives in pyproject.toml; setuptools needs this file only
because the extension's sources and flags are computed here.
"""

import ast
import os
import sys
import sysconfig

# A free-threaded CPython (3.13t, 3.14t) has no GIL and per-thread allocator state, which the
# engine's sampler and allocation hooks assume; docs/design.md ("CPython versions") says what
# supporting it would take. Refused here, in one line, rather than by a compile error.
if sysconfig.get_config_var("Py_GIL_DISABLED"):
    sys.exit(
        "heatline: free-threaded CPython (%s, built with --disable-gil) is not supported; "
        "use the default build of CPython 3.9 to 3.15" % sys.version.split()[0]
    )

from setuptools import Extension, setup  # noqa: E402 -- after the refusal, which needs none

NATIVE = "src/heatline/_native"
SOURCES = ["module.c", "convert.c", "engine.c", "sampler.c", "memory.c", "memhooks.c"]
SOURCES += ["livetable.c", "got.c", "frames.c", "stats.c", "linetable.c", "memread.c"]
SOURCES += ["compat.c", "control.c", "remote.c", "remoteobj.c", "elf.c", "seize.c", "native.c"]
SOURCES += ["scope.c", "sigterm.c", "exitstatus.c", "periodic.c", "asyncwait.c"]
SOURCES += ["detach.c", "newthreads.c", "labels.c", "locks.c", "modhooks.c"]
SOURCES += ["gpu.c", "nvml.c", "cupti.c", "inject.c"]

extra_compile_args = ["-std=c11", "-Wall", "-Wextra", "-fvisibility=hidden"]
extra_link_args = []
# HEATLINE_SANITIZE=1 builds the engine with AddressSanitizer + UndefinedBehaviorSanitizer
# (see `make sanitize`).
if os.environ.get("HEATLINE_SANITIZE"):
    san = ["-fsanitize=address,undefined", "-fno-sanitize-recover=undefined"]
    san += ["-fno-omit-frame-pointer", "-O1", "-g"]
    extra_compile_args += san
    extra_link_args += ["-fsanitize=address,undefined"]
if os.environ.get("HEATLINE_WERROR"):
    extra_compile_args.append("-Werror")
# HEATLINE_DEBUG=1 compiles in the engine's checks of its own contracts (HL_ASSERT, debug.h: the
# engine lock held where a function needs it, what the tables hold); the ASan build has them
# too. A plain build leaves them out, so they cost the hooks and the tick nothing.
define_macros = []
if os.environ.get("HEATLINE_DEBUG") or os.environ.get("HEATLINE_SANITIZE"):
    define_macros.append(("HEATLINE_DEBUG", "1"))

# The ranges of the engine's start options are declared once, in heatline/options.py, whose
# command-line parsers apply them; the engine is compiled with the same values (HL_MAX_...),
# read here from the source without importing the package.
RANGES = ("MAX_SAMPLING_INTERVAL_S", "MIN_MEMORY_SAMPLING_WINDOW_BYTES",
          "MAX_MEMORY_SAMPLING_WINDOW_BYTES", "MAX_WRITE_INTERVAL_S")


def _option_ranges():
    with open("src/heatline/options.py", encoding="utf-8") as source:
        tree = ast.parse(source.read())
    found = {}
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name) and node.targets[0].id in RANGES):
            # Numbers and arithmetic on numbers only (1 << 30): evaluated with no names at all.
            expression = compile(ast.Expression(node.value), "options.py", "eval")
            found[node.targets[0].id] = eval(expression, {"__builtins__": {}})  # noqa: S307
    missing = [name for name in RANGES if name not in found]
    if missing:
        sys.exit("heatline: src/heatline/options.py does not declare " + ", ".join(missing))
    return [("HL_" + name, repr(found[name]) + ("ull" if isinstance(found[name], int) else ""))
            for name in RANGES]


define_macros += _option_ranges()

setup(
    ext_modules=[
        Extension(
            "heatline._native",
            sources=[f"{NATIVE}/{name}" for name in SOURCES],
            depends=[os.path.join(NATIVE, n) for n in os.listdir(NATIVE) if n.endswith(".h")],
            extra_compile_args=extra_compile_args,
            define_macros=define_macros,
            extra_link_args=extra_link_args,
        ),
        # heatline attach's agent: a plain shared object loaded into the target process with
        # dlopen (never imported; it does not link against libpython: agent.c).
        Extension(
            "heatline._agent",
            sources=[f"{NATIVE}/agent.c"],
            extra_compile_args=extra_compile_args,
            extra_link_args=extra_link_args,
            libraries=["dl", "pthread"],
        ),
    ]
)
