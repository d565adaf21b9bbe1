"""A module of the program named like a standard or installed one."""

print("re: the program's own")
SENTINEL = "re of the program"
