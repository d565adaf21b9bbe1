"""Prints how many frames lie below its module level, and how deep it can recurse."""

import sys

frame, depth = sys._getframe(), 0
while frame.f_back is not None:
    frame, depth = frame.f_back, depth + 1
print("frames below", depth)


def recurse(n):
    try:
        return recurse(n + 1)
    except RecursionError:
        return n


print("recursion", recurse(0))
