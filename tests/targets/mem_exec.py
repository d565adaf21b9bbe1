"""Allocates, then replaces itself with another program: argv[1] says how.

  execv       os.execv into python -c, which prints and exits with status 3
  execve      os.execve with an environment of its own
  thread      os.execv while another thread is allocating
  numpy       os.execv into a python that imports numpy and allocates
  subprocess  no exec of its own: runs a python child with subprocess and prints its output
"""

import os
import subprocess
import sys
import threading
import time

import numpy as np

CHILD = "import os, sys; print('after exec', sys.argv[1:], os.environ.get('MARK')); sys.exit(3)"
NUMPY_CHILD = (
    "import numpy as np; a = np.ones(10**6); print('numpy child', a.sum(), len(a.tolist()))"
)


def churn():
    while True:
        block = np.ones(20_000)
        values = block.tolist()
        del block, values


def main(mode):
    keep = np.ones(1_000_000)
    words = [str(i) for i in range(100_000)]
    print("before exec", len(words), int(keep.sum()), flush=True)
    if mode == "execv":
        os.execv(sys.executable, [sys.executable, "-c", CHILD, "a"])
    elif mode == "execve":
        os.execve(sys.executable, [sys.executable, "-c", CHILD, "b"], {**os.environ, "MARK": "1"})
    elif mode == "thread":
        threading.Thread(target=churn, daemon=True).start()
        time.sleep(0.05)
        os.execv(sys.executable, [sys.executable, "-c", CHILD, "c"])
    elif mode == "numpy":
        os.execv(sys.executable, [sys.executable, "-c", NUMPY_CHILD])
    elif mode == "subprocess":
        child = subprocess.run(
            [sys.executable, "-c", CHILD, "d"], capture_output=True, text=True, check=False
        )
        print(child.stdout, end="")
        print("child status", child.returncode)
    else:
        raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    main(sys.argv[1])
