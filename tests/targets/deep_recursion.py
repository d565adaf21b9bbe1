"""A deep recursion under a caller, which measures its own truth: every
function on the stack is on it for the whole call, so the inclusive time of outer, of deep and
of the module is the wall time of the call (and of the module's run). Each level spins for a
fixed wall time before it recurses, so the run lasts as long on a loaded machine.

Usage: deep_recursion.py TRUTH.json [DEPTH [SPIN_S [DISTINCT]]]. With DISTINCT=1 the chain is
made of DEPTH distinct functions instead (chain_0 calls chain_1 ...), none of them recursive:
the ones in the middle of the stack are elided and cannot keep their inclusive time."""

import time

START = time.perf_counter()

import json  # noqa: E402
import sys  # noqa: E402

sys.setrecursionlimit(10000)
DEPTH = int(sys.argv[2]) if len(sys.argv) > 2 else 400
SPIN_S = float(sys.argv[3]) if len(sys.argv) > 3 else 0.005
DISTINCT = len(sys.argv) > 4 and sys.argv[4] == "1"


def spin():
    until = time.perf_counter() + SPIN_S
    x = 0
    while time.perf_counter() < until:
        x += 1
    return x


def deep(n):
    spin()
    if n:
        deep(n - 1)


# chain_0 ... chain_DEPTH: each notes when it was entered, spins, then calls the next.
ENTERED = [0.0] * (DEPTH + 1)
for _i in range(DEPTH + 1):
    _next = f"    chain_{_i + 1}()\n" if _i < DEPTH else ""
    exec(f"def chain_{_i}():\n    ENTERED[{_i}] = time.perf_counter()\n    spin()\n{_next}")


def outer():
    began = time.perf_counter()
    if DISTINCT:
        chain_0()  # noqa: F821 -- defined by exec above
    else:
        deep(DEPTH)
    return time.perf_counter() - began


outer_s = outer()
ended = time.perf_counter()
module_s = ended - START
# A chain function is on the stack from its entry until the chain returns (all at once).
chain_s = {f"chain_{i}": ended - t for i, t in enumerate(ENTERED)} if DISTINCT else {}
with open(sys.argv[1], "w") as f:
    json.dump({"outer_s": outer_s, "module_s": module_s, "depth": DEPTH, "chain_s": chain_s}, f)
