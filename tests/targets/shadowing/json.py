"""A module of the program named like a standard or installed one."""

print("json: the program's own")
SENTINEL = "json of the program"
