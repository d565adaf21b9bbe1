"""A module of the program named like a standard or installed one."""

print("rich: the program's own")
SENTINEL = "rich of the program"
