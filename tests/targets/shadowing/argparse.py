"""A module of the program named like a standard or installed one."""

print("argparse: the program's own")
SENTINEL = "argparse of the program"
