"""Allocates and frees on a few lines for argv[1] seconds, leaking a little (timeline bounds)."""

import sys
import time

import numpy as np


def churn(seconds):
    kept = []
    rounds = 0
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        block = np.ones(200_000)
        values = block.tolist()
        kept.append(bytes(1000 + len(values) % 7))
        rounds += 1
    return rounds


if __name__ == "__main__":
    print("rounds:", churn(float(sys.argv[1])) > 0)
