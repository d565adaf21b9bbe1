"""Ground truth, main thread only: one phase of each kind of work, each about 0.5 s."""


import hashlib
import os
import subprocess
import sys
import time

import numpy as np

from _truth import phase

SCALE = float(os.environ.get("HEATLINE_TARGET_SCALE", "1"))


@phase("python")
def python_loop():
    total = 0
    for i in range(int(5_000_000 * SCALE)):
        total += i * i % 7
    return total


@phase("native")
def numpy_sort(values):
    # One long call that holds the GIL the whole time.
    return np.sort(values, kind="heapsort")


@phase("native")
def matrix_multiply(a, b):
    # BLAS, called through an operator: the GIL is released, no CALL instruction involved.
    for _ in range(4):
        a = a @ b
        a /= np.abs(a).max()
    return a


@phase("native")
def hash_buffer(buffer):
    # hashlib releases the GIL for large buffers.
    digest = hashlib.sha256()
    for _ in range(3):
        digest.update(buffer)
    return digest.hexdigest()


@phase("system")
def sleep_phase():
    time.sleep(0.5 * SCALE)


@phase("system")
def blocking_read():
    # Blocking I/O: a child process answers after a delay.
    child = subprocess.Popen(
        [sys.executable, "-c", f"import time; time.sleep({0.5 * SCALE}); print('done')"],
        stdout=subprocess.PIPE,
    )
    data = child.stdout.read()
    child.wait()
    return data


def main():
    rng = np.random.default_rng(0)
    values = rng.random(int(16_000_000 * SCALE))
    n = int(1500 * SCALE ** (1 / 3))
    a, b = rng.random((n, n)), rng.random((n, n))
    buffer = b"\x01" * int(300_000_000 * SCALE)
    python_loop()
    numpy_sort(values)
    matrix_multiply(a, b)
    hash_buffer(buffer)
    sleep_phase()
    blocking_read()


if __name__ == "__main__":
    main()
