"""A module of the program named like a standard or installed one."""

print("linecache: the program's own")
SENTINEL = "linecache of the program"
