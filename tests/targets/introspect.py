"""Prints how the program sees itself as __main__; must match a plain python run."""

import json
import os
import sys

marker = "here"
main = sys.modules["__main__"]
print(
    json.dumps(
        {
            "__name__": __name__,
            "__file__": __file__,
            "__package__": __package__,
            "__spec__": None if __spec__ is None else __spec__.name,
            "__cached__": globals().get("__cached__", "not set"),  # not set from 3.15
            "__loader__": type(__loader__).__name__,
            "__builtins__ is module": type(__builtins__).__name__,
            "__doc__": __doc__,
            "main module is this one": getattr(main, "marker", None) == "here",
            "argv": sys.argv,
            "path0": sys.path[0],
            "cwd": os.getcwd(),
        },
        indent=1,
    )
)
