"""A module of the program named like a standard or installed one."""

print("random: the program's own")
SENTINEL = "random of the program"
