"""A module of the program named like a standard or installed one."""

print("shutil: the program's own")
SENTINEL = "shutil of the program"
