"""A sampled object stays where the program's allocator put it, so what CPython keeps alive by
address is kept alive as often under heatline as without it (tests/targets/memory_visitor.py).

The target's dispatch line makes a fresh name string on every call and drops it; CPython's type
attribute cache keeps some of those names alive, chosen by their address. A sampled block moved
to another address (a larger block, so that its free reaches another hook) was kept by the cache
almost every time: the line held about 40 windows at exit at the default window, against a
truth of about 24 KiB, and was flagged as a leak in every run.
"""

import json

from heatline import data as profile

WINDOW = 4096
# What the type attribute cache can hold of the line's names: 4,096 slots, a name of at most 64
# bytes (pymalloc's size class) in each.
CACHE_BOUND = 4096 * 64


def test_names_kept_by_address_are_held_as_without_heatline(
    run_python, run_heatline, program, profile_path
):
    target = program("memory_visitor.py")
    plain = run_python(target, "--tracemalloc", timeout=300)
    assert plain.returncode == 0, plain.stderr.decode(errors="replace")
    truth = json.loads(plain.stdout.decode().splitlines()[-1])
    assert 0 < truth["held_bytes"] <= CACHE_BOUND, truth

    result = run_heatline(
        "-q", "--memory-sampling-window", str(WINDOW), "-o", profile_path, target, timeout=300
    )
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    data = profile.load(profile_path)
    (line,) = [line for line in data["files"][target]["lines"] if line["line"] == truth["line"]]

    # The line allocates 16 to 38 MiB, by version (a name, and before 3.15 a bound method, per
    # call): thousands of samples, nearly all freed.
    assert line["alloc_python_bytes"] > 8 * 1024 * 1024, line
    # Held at exit: each surviving name is sampled with probability about its size / WINDOW,
    # independently of whether it survives, so the count of surviving samples has mean
    # truth / WINDOW (about 6) and a variance no larger. Four standard deviations and a window
    # for the names the cache keeps under heatline but not in the tracemalloc run (which names
    # survive depends on their addresses, and heatline's own objects shift them a little).
    expected = truth["held_bytes"] / WINDOW
    allowed = (expected + 4 * expected**0.5 + 1) * WINDOW
    assert line["growth_bytes"] <= allowed, (truth, line)
    assert line["leak"] is None, (truth, line)
