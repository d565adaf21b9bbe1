"""A function that is mostly idle (sleeping: system time) beside one that computes (Python
time), and no native work to speak of: the function table's columns should keep what this
profile has, the system time, at any width."""

import time


def wait_for_the_next_batch_of_work_items(seconds):
    time.sleep(seconds)


def compute_the_checksum_of_the_work_items(n):
    total = 0
    for i in range(n):
        total = (total * 31 + i) % 1000003
    return total


for _ in range(4):
    wait_for_the_next_batch_of_work_items(0.1)
    compute_the_checksum_of_the_work_items(100_000)
