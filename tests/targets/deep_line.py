"""A hot line deep inside nested blocks, longer than a narrow terminal leaves it: the report
must show it whole (dedented, wrapped, or on a row of its own), never cut to an ellipsis (the
test looks for that character in the table, so this file holds none)."""

import sys
import threading

CACHE = {}


class Cache:
    def __init__(self):
        self.lock = threading.Lock()

    def fill(self, rounds):
        for round_number in range(rounds):
            for key in range(200):
                if key % 2 == 0:
                    with self.lock:
                        CACHE[(round_number, key)] = [str(value * 3 + key) for value in range(key, key + 60)]  # noqa: E501


Cache().fill(int(sys.argv[1]) if len(sys.argv) > 1 else 300)
