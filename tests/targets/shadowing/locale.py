"""A module of the program named like a standard or installed one."""

print("locale: the program's own")
SENTINEL = "locale of the program"
