"""heatline dump --locals' target (tests/integration/test_dump_locals.py): threads named by
threading, each blocked at a known line holding known local variables, and a thread of its own
that threading does not know.

- "worker-one" waits on an Event in hold_text(label, count, items, ...): label is a str, count
  an int, items a list of 3, and more kinds (below) whose reprs are known.
- "worker-two" waits in hold_numbers(big, negative, ratio, ...): ints past 64 bits, a negative
  one, floats, a tuple, a dict, a set, None, True, bytes, a long str (cut in the repr), an
  object of a class of the target's own, strs of 2 and 4 bytes a character, and a variable a
  nested function reads (a cell).
- "raw-worker" is a thread started by _thread, which threading does not know: it names itself
  to the kernel only (prctl PR_SET_NAME) and waits in hold_raw().
- The main thread sleeps in main().

argv[1]: a file written once every thread is where its stack is known: "PID" then, one a line,
each named thread's "name ident line" (its waiting line). Then the main thread waits for the
file argv[1] + ".go" (or for 600 s) and exits with status 3 after printing "done" and the sum
its workers computed, so that a test can compare its output and exit with a run heatline never
read. With argv[2] == "ptracer", the process first lets any process of its user trace it
(prctl PR_SET_PTRACER_ANY), which Yama's ptrace_scope 1 otherwise refuses to a process that is
not its parent.
"""

import _thread
import ctypes
import os
import sys
import threading
import time

if sys.argv[2:] == ["ptracer"]:
    PR_SET_PTRACER, PR_SET_PTRACER_ANY = 0x59616D61, ctypes.c_ulong(-1).value
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0)

release = threading.Event()
raw_release = _thread.allocate_lock()
raw_release.acquire()
raw_done = _thread.allocate_lock()
raw_done.acquire()
lines = {}
results = []


class Widget:
    pass


def hold_text(label, count, items):
    quoted = "it's"
    text_bytes = b"a\x00b"
    lines["worker-one"] = sys._getframe().f_lineno + 1
    release.wait()
    results.append(count + len(items) + len(label) + len(quoted) + len(text_bytes))


def hold_numbers(big, negative, ratio):
    pair = (1, 2)
    table = {"a": 1, "b": 2}
    seen = {1, 2, 3, 4}
    nothing = None
    flag = True
    long_text = "x" * 100
    widget = Widget()
    small, tiny, huge = 0.1, 1e-05, 1e16
    greek, smile = "\u03b1\u03b2\u03b3", "\U0001f600"  # 2 and 4 bytes a character
    captured = 7

    def reader():
        return captured

    lines["worker-two"] = sys._getframe().f_lineno + 1
    release.wait()
    results.append(big + negative + int(ratio) + len(pair) + len(table) + len(seen)
                   + len(long_text) + reader() + (nothing is None) + flag + (widget is not None)
                   + len(greek) + len(smile) + (small + tiny + huge > 1))


def hold_raw():
    PR_SET_NAME = 15
    ctypes.CDLL(None).prctl(PR_SET_NAME, b"raw-worker", 0, 0, 0)
    lines["raw-worker"] = (_thread.get_ident(), sys._getframe().f_lineno + 1)
    raw_release.acquire()
    results.append(1)
    raw_done.release()


def main():
    one = threading.Thread(target=hold_text, args=("hello", 42, [1, 2, 3]), name="worker-one")
    two = threading.Thread(target=hold_numbers, args=(2**70 + 5, -12345, 2.5), name="worker-two")
    one.start()
    two.start()
    _thread.start_new_thread(hold_raw, ())
    while len(lines) < 3:
        time.sleep(0.01)
    time.sleep(0.2)  # each worker is inside release.wait() by now
    with open(sys.argv[1] + ".tmp", "w") as ready:
        ready.write(f"{os.getpid()}\n")
        for thread in (one, two):
            ready.write(f"{thread.name} {thread.ident} {lines[thread.name]}\n")
        ready.write("raw-worker {} {}\n".format(*lines["raw-worker"]))
    os.replace(sys.argv[1] + ".tmp", sys.argv[1])
    deadline = time.monotonic() + 600
    while not os.path.exists(sys.argv[1] + ".go") and time.monotonic() < deadline:
        time.sleep(0.02)
    release.set()
    raw_release.release()
    one.join()
    two.join()
    raw_done.acquire()
    print("done", sum(results))
    sys.exit(3)


if __name__ == "__main__":
    main()
