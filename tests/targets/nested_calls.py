"""Inclusive time and call edges: main() calls outer(), which calls leaf_a() and leaf_b(), and
then calls leaf_a() directly. Each call's wall time is written (JSON) to argv[1]: the truth."""

import json
import sys
import time


def spin(n):
    total = 0
    for i in range(n):
        total += i % 7
    return total


def leaf_a(n):
    return spin(n)


def leaf_b(n):
    return spin(n)


LEAVES = {}


def outer(n):
    started = time.perf_counter()
    a = leaf_a(n)
    LEAVES["a_in_outer_s"] = time.perf_counter() - started
    b = leaf_b(2 * n)
    LEAVES["b_in_outer_s"] = time.perf_counter() - started - LEAVES["a_in_outer_s"]
    return a + b


def main(n):
    clock = time.perf_counter
    started = clock()
    outer(n)
    outer_s = clock() - started
    leaf_a(n)
    direct_a_s = clock() - started - outer_s
    return {"main_s": clock() - started, "outer_s": outer_s, "direct_a_s": direct_a_s, **LEAVES}


truth = main(int(sys.argv[2]) if len(sys.argv) > 2 else 3_000_000)
with open(sys.argv[1], "w") as out:
    json.dump(truth, out)
