"""Exits the way argv[1] says: an int status, a message, or an uncaught exception."""

import sys


def fail_inner():
    raise ValueError("something went wrong")


def fail_outer():
    try:
        fail_inner()
    except ValueError as exc:
        raise RuntimeError("while doing the outer thing") from exc


how = sys.argv[1]
print("before exit")
if how == "raise":
    fail_outer()
elif how.isdigit():
    sys.exit(int(how))
else:
    sys.exit(how)
