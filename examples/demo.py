"""heatline's demo: a few kinds of work, each in its own function, to show how heatline splits
time between Python, native code and the system, and what it shows about memory: numpy's
native buffers, Python objects, copies, and a line that leaks. Run it with
``heatline examples/demo.py`` (or ``make demo``); it takes about 2-3 seconds."""

import hashlib
import sys
import threading
import time

try:
    import numpy as np
except ImportError:
    sys.exit("examples/demo.py needs numpy: pip install numpy (make demo installs it)")


def python_loop(n):
    """Pure Python: the time is charged as Python time on these lines."""
    total = 0
    for i in range(n):
        if i % 3:
            total += i * i
        else:
            total -= i
    return total


def numpy_work(size):
    """numpy: the time is spent in native code called from these lines."""
    rng = np.random.default_rng(0)
    values = rng.random(size)
    ordered = np.sort(values)
    matrix = rng.random((600, 600))
    product = matrix @ matrix
    return float(ordered[size // 2] + product[0, 0])


def sleep_a_bit(seconds):
    """Waiting: the time is charged as system time."""
    time.sleep(seconds)


HISTORY = []


def hash_buffer(buffer, stop):
    """Runs on a worker thread until the main thread is done; hashlib releases the GIL while it
    hashes. `buffer + digest` copies the buffer each round; HISTORY keeps growing for the whole
    run: a leak."""
    digest = b""
    while not stop.is_set():
        digest = hashlib.sha256(buffer + digest).digest()
        HISTORY.append(bytearray(256 * 1024))
    return digest


def main():
    buffer = b"heatline" * (1 << 20)  # 8 MiB
    stop = threading.Event()
    worker = threading.Thread(target=hash_buffer, args=(buffer, stop))
    worker.start()
    print("python_loop:", python_loop(10_000_000))
    print("numpy_work:", round(numpy_work(8_000_000), 3))
    sleep_a_bit(0.5)
    stop.set()
    worker.join()
    print("done")


if __name__ == "__main__":
    main()
