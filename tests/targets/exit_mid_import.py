"""A fork child that ends (os._exit, as fork-start workers end) in the middle of importing
multiprocessing.process, at the line that starts with argv[1]: the module is left half
imported, as it is for good in a fork child of a thread that was importing it, or in a
process killed by SIGTERM during the import."""

import os
import sys

WHERE = sys.argv[1]
MODULE = os.path.join("multiprocessing", "process.py")


def tracer(frame, event, arg):
    if not frame.f_code.co_filename.endswith(MODULE):
        return None
    if event == "line" and frame.f_code.co_name == "<module>":
        with open(frame.f_code.co_filename) as f:
            line = f.read().splitlines()[frame.f_lineno - 1]
        if line.startswith(WHERE):
            os._exit(0)
    return tracer


assert "multiprocessing.process" not in sys.modules
pid = os.fork()
if pid == 0:
    sys.settrace(tracer)
    import multiprocessing.process  # noqa: F401
    os._exit(1)  # the tracer ended the child before this
print("child exit status", os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
