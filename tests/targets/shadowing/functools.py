"""A module of the program named like a standard or installed one."""

print("functools: the program's own")
SENTINEL = "functools of the program"
