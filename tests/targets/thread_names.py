"""Threads with names, for the thread-names tests (test_thread_names.py).

- "brief": a named thread that ends early, its Thread object dropped at once (no reference is
  kept, and a collection runs after it ended): its name can only have been read while it lived;
- "raw": a thread started with _thread.start_new_thread, which threading does not know: its
  name is the kernel's (its comm, which it records);
- "loader" and "writer": named threads doing 0.3 s and 0.6 s of Python work (spinning on the
  clock); writer is created as "pending" and renames itself before its work (the last name
  counts: their objects are kept, so the names are read again at the end whatever the main
  thread was doing when they started);
- a thread whose name is hostile text (HOSTILE): HTML and rich markup.

Writes to the file named by argv[1] (JSON): "spans" (name -> wall seconds each thread's work
took), "native_ids" (name -> kernel thread id), "raw_comm", "main_native_id"."""

import _thread
import gc
import json
import sys
import threading
import time

HOSTILE = "<script>alert('pwned')</script>[bold]h[/bold]"
spans = {}
native_ids = {}
raw_comm = []


def spin(seconds):
    deadline = time.perf_counter() + seconds
    x = 0
    while time.perf_counter() < deadline:
        x += 1
    return x


def work(key, seconds, rename=None):
    start = time.perf_counter()  # all the time of the thread's user frames from here
    if rename is not None:
        threading.current_thread().name = rename
    native_ids[key] = threading.get_native_id()
    spin(seconds)
    spans[key] = time.perf_counter() - start


def raw(done):
    with open(f"/proc/self/task/{threading.get_native_id()}/comm") as f:
        raw_comm.append(f.read().strip())
    work("raw", 0.2)
    done.release()


def main():
    threading.Thread(target=work, args=("brief", 0.1), name="brief").start()
    while "brief" not in spans:  # the main thread runs Python code while brief lives
        spin(0.005)
    time.sleep(0.05)
    gc.collect()  # no object of brief's is left
    assert not any(t.name == "brief" for t in threading.enumerate())
    done = _thread.allocate_lock()
    done.acquire()
    _thread.start_new_thread(raw, (done,))
    global threads  # kept to the end, where every name is read again (the rename too)
    threads = [threading.Thread(target=work, args=("loader", 0.3), name="loader"),
               threading.Thread(target=work, args=("writer", 0.6, "writer"), name="pending"),
               threading.Thread(target=work, args=("hostile", 0.1), name=HOSTILE)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    done.acquire()
    with open(sys.argv[1], "w") as f:
        json.dump({"spans": spans, "native_ids": native_ids, "raw_comm": raw_comm[0],
                   "main_native_id": threading.get_native_id()}, f)


main()
