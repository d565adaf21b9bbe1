"""_thread.interrupt_main(SIGTERM) only simulates a signal: while SIGTERM has its default
action python does nothing (CPython's test_threading, check_interrupt_main_noerror), with the
program's own handler that handler runs. Then a real SIGTERM, which kills as ever. The same
again in a Python child (``child``), whose output and fate the parent reports."""

import _thread
import os
import signal
import subprocess
import sys
import time


def settle():
    # A simulated signal's handler runs at the main thread's next check for signals, at the
    # latest at the loop's first backward jump.
    for _ in range(20):
        time.sleep(0.001)


def interrupt(label):
    _thread.interrupt_main(signal.SIGTERM)
    settle()
    print(label, "still alive", flush=True)


def main():
    interrupt("default:")
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    interrupt("ignored:")
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    interrupt("default again:")
    seen = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: seen.append(signum))
    interrupt("own handler:")
    settle()
    print("own handler ran for", seen, "previous was default:", previous is signal.SIG_DFL,
          flush=True)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


main()
if sys.argv[1:] != ["child"]:
    child = subprocess.run([sys.executable, __file__, "child"], stdout=subprocess.PIPE)
    sys.stdout.write(child.stdout.decode())
    print("child status", child.returncode, flush=True)
os.kill(os.getpid(), signal.SIGTERM)  # a real one: python dies of it, and so must the program
time.sleep(60)
print("not reached", flush=True)
