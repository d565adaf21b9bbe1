"""Leaves work for Python's shutdown, then ends by an uncaught KeyboardInterrupt: a buffered
file that only the interpreter's finalization closes, a __del__ and an atexit handler."""

import atexit
import sys

out_dir = sys.argv[1]


class Finalized:
    def __del__(self):
        print("finalizer ran", flush=True)


finalized = Finalized()
atexit.register(lambda: open(f"{out_dir}/atexit.txt", "w").write("atexit ran"))
buffered = open(f"{out_dir}/buffered.txt", "w")  # noqa: SIM115 -- left for shutdown to close
buffered.write("data the program wrote")
print("before the interrupt")
raise KeyboardInterrupt
