"""Native frames' target: where the interpreter's own samples go, and C++ names.

Usage: native_interpreter.py [CXX_LIBRARY]

  line PYTHON: a pure-Python library function (colorsys, bytecode with a few builtin calls)
               in a loop on one line: the interpreter running bytecode, whose samples in the
               eval loop are Python time and must name no native function;
  line SORTED: sorted() of a large list: native work inside libpython (list_sort's
               functions), which must stay named;
  line CXX:    a C++ function template (tests/targets/_burn_cxx.cpp), when a library is given.
"""

import colorsys
import ctypes
import random
import sys

values = [random.random() for _ in range(400_000)]
for _ in range(1_500_000): colorsys.rgb_to_hls(0.2, 0.4, 0.6)  # noqa: E701 line PYTHON
for _ in range(12): sorted(values)  # noqa: E701 line SORTED
if len(sys.argv) > 1:
    burn = ctypes.CDLL(sys.argv[1]).burn_cxx
    burn.restype = ctypes.c_double
    burn(1_000_000, 100)  # line CXX
