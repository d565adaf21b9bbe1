"""Python children inherit the process's C environment, as exec passes it on: os.putenv,
os.unsetenv and a C library's setenv change it without os.environ knowing (CPython's
test_os.EnvironTests.test_putenv_unsetenv), and so does a putenv in preexec_fn
(test_subprocess's test_preexec). Each child prints what it got."""

import ctypes
import os
import subprocess
import sys

CODE = ("import os; print(sys_label, [os.environ.get(n) for n in "
        "('PUT', 'GONE', 'FROM_C', 'FRUIT')], os.environ.get('PYTHONPATH'))")


def child(label, **kwargs):
    code = f"sys_label = {label!r}; " + CODE
    subprocess.run([sys.executable, "-c", code], check=True, **kwargs)
    sys.stdout.flush()


os.environ["GONE"] = "in os.environ only"
os.unsetenv("GONE")
os.putenv("PUT", "put")
ctypes.CDLL(None).setenv(b"FROM_C", b"setenv", 1)
os.putenv("PYTHONPATH", "/put/path")
print("os.environ:", [os.environ.get(n) for n in ("PUT", "GONE", "FROM_C", "PYTHONPATH")])
sys.stdout.flush()
child("inherited")
child("preexec_fn", preexec_fn=lambda: os.putenv("FRUIT", "apple"))
# (An ASan build of heatline, `make sanitize`, needs its runtime preloaded in every process
# that loads the engine: a given environment keeps LD_PRELOAD, or the profiled child dies.)
PRELOAD = {"LD_PRELOAD": os.environ["LD_PRELOAD"]} if "LD_PRELOAD" in os.environ else {}
child("preexec_fn and env", preexec_fn=lambda: os.putenv("FRUIT", "apple"),
      env={"PUT": "given", **PRELOAD})
pid = os.fork()
if pid == 0:
    os.execv(sys.executable, [sys.executable, "-c", "sys_label = 'execv'; " + CODE])
os.waitpid(pid, 0)
