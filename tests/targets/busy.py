"""A short CPU-bound program with a hot loop and idle lines, for report tests."""


def hot_loop():
    total = 0
    for i in range(600_000):
        total += i % 7
    return total


def never_called():
    """Never called. Its body is more than two lines (a report's context) from every line that
    runs, its own def statement included: a sample or a sampled allocation on one of those
    (more likely on a loaded machine, where the program runs slowly between samples) must not
    be what lists it.
    """
    return "idle"


print(hot_loop())
