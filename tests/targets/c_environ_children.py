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
child("preexec_fn and env", preexec_fn=lambda: os.putenv("FRUIT", "apple"),
      env={"PUT": "given"})
pid = os.fork()
if pid == 0:
    os.execv(sys.executable, [sys.executable, "-c", "sys_label = 'execv'; " + CODE])
os.waitpid(pid, 0)
