"""Run with --off: only the part after heatline.resume() may appear in the profile."""

import time

import heatline


def unprofiled_part():
    deadline = time.perf_counter() + 0.15
    while time.perf_counter() < deadline:
        pass


def profiled_part():
    deadline = time.perf_counter() + 0.15
    while time.perf_counter() < deadline:
        pass


unprofiled_part()
heatline.resume()
profiled_part()
heatline.pause()
unprofiled_part()
