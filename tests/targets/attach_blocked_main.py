"""For heatline attach: the main thread blocked in a C call (threading.Event.wait, a lock
acquire) until a worker, spinning in pure Python, sees DIRECTORY/finish and sets the event; the
main thread then prints what it saw and ends. Until then it reaches no point where it could run
a sys.remote_exec script; it then counts the scripts it ran (the interpreter's audit event).
argv: DIRECTORY. Writes DIRECTORY/ready (its pid) once both run."""

import os
import sys
import threading

from _attachable import allow_tracing, mark

DIRECTORY = sys.argv[1]
woken = threading.Event()
scripts = []
sys.addaudithook(lambda event, args: event == "cpython.remote_debugger_script"
                 and scripts.append(args))


def spin():
    total = 0
    while not os.path.exists(os.path.join(DIRECTORY, "finish")):
        for i in range(20000):
            total += i * i
    woken.set()


allow_tracing()
worker = threading.Thread(target=spin, name="worker")
worker.start()
mark(DIRECTORY, "ready", str(os.getpid()))
woken.wait()
worker.join()
print("woken; remote_exec scripts run:", len(scripts), flush=True)
