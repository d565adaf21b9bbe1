"""Memory for the summary's rules, one behaviour per mode (argv[1]):

- "leak": a list that keeps every 256 KiB buffer made, steadily for the whole run;
- "copies": the same 32 MiB buffer copied into a new bytes object 16 times;
- "peak": two large buffers made once and held together (the peak), then freed;
- "quiet": Python arithmetic that allocates next to nothing.
"""

import sys

KEPT = []


def work(n):
    total = 0
    for i in range(n):
        total += i % 5
    return total


def leak():
    for _ in range(200):
        KEPT.append(bytearray(256 * 1024))  # kept until the end: a leak
        work(5_000)


def copies():
    buffer = bytearray(32 << 20)
    for _ in range(16):
        frozen = bytes(buffer)  # a new copy of the buffer each time
        work(2_000)
    return len(frozen)


def peak():
    large = bytearray(96 << 20)
    larger = bytearray(160 << 20)
    work(300_000)  # both held here: the peak
    del large, larger
    work(300_000)


def quiet():
    work(1_500_000)


if __name__ == "__main__":
    {"leak": leak, "copies": copies, "peak": peak, "quiet": quiet}[sys.argv[1]]()
    print("done")
