"""A module of the program named like a standard or installed one."""

print("signal: the program's own")
SENTINEL = "signal of the program"
