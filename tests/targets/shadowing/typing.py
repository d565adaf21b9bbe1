"""A module of the program named like a standard or installed one."""

print("typing: the program's own")
SENTINEL = "typing of the program"
