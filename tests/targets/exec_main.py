"""The main process execs (os.execv) a new program after some work: itself again under
Python (``python``: with a fork child still running across the exec, and a second exec after
that one), /bin/echo (``echo``), a path that does not exist (``missing``) or an executable
file named like Python that is none (``broken DIR``), both of which fail. What it
printed without flushing before an exec is lost, as an exec loses it."""

import os
import sys
import time


# Each spins for at least 0.2 s of CPU time in its own loop, however loaded the machine is,
# so that its lines must have samples. Both lines of a loop carry its marker: the time splits
# between them by what each costs (process_time() is a system call), and one of them alone can
# get no sample (a loop of a dozen samples can give its body none).


def before_exec():
    end = time.process_time() + 0.2
    while time.process_time() < end:  # before the exec
        sum(range(100))  # before the exec


def after_exec():
    end = time.process_time() + 0.2
    while time.process_time() < end:  # after the exec
        sum(range(100))  # after the exec


def child_across_the_exec():
    time.sleep(0.5)  # still running when the main process execs
    os._exit(0)


mode = sys.argv[1]
if mode == "python":
    before_exec()
    read, write = os.pipe()
    if os.fork() == 0:
        child_across_the_exec()
    print("before the exec", flush=True)
    sys.stdout.write("lost, never flushed\n")
    os.execv(sys.executable, [sys.executable, __file__, "after", str(read), str(write)])
elif mode == "after":
    after_exec()
    print("after the exec", flush=True)
    os.wait()  # the fork child of the first program
    os.execve(sys.executable, [sys.executable, "-c", "print('third program')"],
              dict(os.environ, THIRD="1"))
elif mode == "echo":
    before_exec()
    print("before the exec", flush=True)
    sys.stdout.write("lost, never flushed\n")
    os.execv("/bin/echo", ["echo", "echoed"])
elif mode == "missing":
    before_exec()
    try:
        os.execv("/nonexistent/python3", ["python3"])
    except OSError as exc:
        print("exec failed:", exc.strerror, flush=True)
    after_exec()
elif mode == "broken":
    # An executable file named like this Python that is none: the exec fails (ENOEXEC) after
    # heatline has handed the run over, so the run must go on here.
    fake = os.path.join(sys.argv[2], "python%d.%d" % sys.version_info[:2])
    with open(fake, "w"):
        pass
    os.chmod(fake, 0o755)
    before_exec()
    try:
        os.execv(fake, [fake, "-c", "pass"])
    except OSError as exc:
        print("exec failed:", exc.strerror, flush=True)
    after_exec()
