"""Python children started with PYTHONPATH unset, empty and set (argv[1]: a directory to put
there) print their sys.path and PYTHONPATH: under heatline, which follows them by putting its
hook directory on PYTHONPATH, both must be what they are under python."""

import os
import subprocess
import sys

CHILD = "import os, sys; print(sys.path); print(repr(os.environ.get('PYTHONPATH')))"
base = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
for name, extra in (("unset", {}), ("empty", {"PYTHONPATH": ""}),
                    ("set", {"PYTHONPATH": sys.argv[1]})):
    for how in ("env", "os.environ", "preexec_fn"):
        if how == "env":  # an environment given to the exec
            out = subprocess.run([sys.executable, "-c", CHILD], env={**base, **extra},
                                 capture_output=True, text=True, check=True).stdout
        else:  # the inherited one (with a preexec_fn: the C environment it leaves)
            os.environ.pop("PYTHONPATH", None)
            os.environ.update(extra)
            preexec = (lambda: None) if how == "preexec_fn" else None
            out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True,
                                 check=True, preexec_fn=preexec).stdout
        print(name, how, out, end="")
