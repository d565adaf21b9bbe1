"""A short CPU-bound program with a hot loop and idle lines, for report tests."""


def hot_loop():
    total = 0
    for i in range(600_000):
        total += i % 7
    return total


def never_called():
    return "idle"


print(hot_loop())
