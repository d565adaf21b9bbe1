"""Sends instances of a class defined in __main__ to a spawned process and back."""

import multiprocessing


class Point:
    def __init__(self, x, y):
        self.x, self.y = x, y


def double(point):
    return Point(point.x * 2, point.y * 2)


if __name__ == "__main__":
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        result = pool.map(double, [Point(1, 2), Point(3, 4)])
    print([(p.x, p.y) for p in result])
