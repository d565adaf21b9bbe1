"""Ground truth with threads: native and Python work in worker threads, the main thread
waiting in join(), a lock wait, and many threads competing for the GIL."""

import hashlib
import os
import threading
import time

from _truth import phase

SCALE = float(os.environ.get("HEATLINE_TARGET_SCALE", "1"))


@phase("native")
def hash_worker(buffer):
    # Releases the GIL: runs in parallel with the Python worker.
    for _ in range(3):
        hashlib.sha256(buffer).digest()


@phase("python")
def python_worker(n):
    total = 0
    for i in range(n):
        total += i * i % 7
    return total


@phase("system")
def wait_for_workers(threads):
    for thread in threads:
        thread.join()


@phase("system")
def wait_for_lock(lock):
    with lock:
        pass


def hold_lock(lock, ready, seconds):
    with lock:
        ready.set()
        time.sleep(seconds)


@phase("python")  # eight threads take turns holding the GIL
def many_worker(n):
    total = 0
    for i in range(n):
        total += i % 3
    return total


def main():
    buffer = b"\x01" * int(150_000_000 * SCALE)
    workers = [
        threading.Thread(target=hash_worker, args=(buffer,)),
        threading.Thread(target=python_worker, args=(int(3_000_000 * SCALE),)),
    ]
    for worker in workers:
        worker.start()
    wait_for_workers(workers)

    lock, ready = threading.Lock(), threading.Event()
    holder = threading.Thread(target=hold_lock, args=(lock, ready, 0.5 * SCALE))
    holder.start()
    ready.wait()
    wait_for_lock(lock)
    holder.join()

    many = [threading.Thread(target=many_worker, args=(int(1_200_000 * SCALE),)) for _ in range(8)]
    for worker in many:
        worker.start()
    wait_for_workers(many)


if __name__ == "__main__":
    main()
