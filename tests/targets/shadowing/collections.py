"""A module of the program named like a standard or installed one."""

print("collections: the program's own")
SENTINEL = "collections of the program"
