"""A module of the program named like a standard or installed one."""

print("pygments: the program's own")
SENTINEL = "pygments of the program"
