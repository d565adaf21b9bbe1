"""Steps in two processes: the main process marks 6 step boundaries (5 steps) and a fork child
4 (3 steps), each with heatline.step(); each process's steps are its own."""

import multiprocessing
import time

import heatline


def loop(marks):
    for _ in range(marks):
        heatline.step()
        time.sleep(0.03)


if __name__ == "__main__":
    child = multiprocessing.get_context("fork").Process(target=loop, args=(4,))
    child.start()
    loop(6)
    child.join()
    print("{}")
