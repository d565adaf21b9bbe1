"""A module of the program named like a standard or installed one."""

print("datetime: the program's own")
SENTINEL = "datetime of the program"
