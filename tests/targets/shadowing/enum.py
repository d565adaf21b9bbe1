"""A module of the program named like a standard or installed one."""

print("enum: the program's own")
SENTINEL = "enum of the program"
