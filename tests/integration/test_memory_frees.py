"""The free of every sampled block is seen, whichever allocator CPython runs with
(tests/targets/memory_frees.py says why each of its lines' growth is exactly 0 when no free is
missed). Leaving pymalloc's MEM and OBJ frees unhooked (a sampled small block made one whose
free reaches the RAW domain) missed a free in about one run in six of this very check, so it is
disabled (memhooks.c, install_python_hooks) and every allocator's frees are hooked: the test
checks that too, so that turning it back on is a change the test sees."""

import json

import pytest

from heatline import data as profile

WINDOW = 16 * 1024
TAG = "# small-blocks"

# name: (environment, whether the MEM and OBJ frees are left unhooked)
ALLOCATORS = {
    "pymalloc": ({"PYTHONMALLOC": "pymalloc"}, False),
    # tracemalloc started first: its hooks wrap pymalloc, without headers.
    "pymalloc+tracemalloc": ({"PYTHONMALLOC": "pymalloc", "PYTHONTRACEMALLOC": "1"}, False),
    # A header moves the address pymalloc hands to RAW: the frees are hooked.
    "pymalloc_debug": ({"PYTHONMALLOC": "pymalloc_debug"}, False),
    "malloc": ({"PYTHONMALLOC": "malloc"}, False),
}


@pytest.mark.parametrize("allocator", list(ALLOCATORS))
def test_every_sampled_small_block_free_is_seen(run_heatline, program, profile_path, allocator):
    env, unhooked = ALLOCATORS[allocator]
    target = program("memory_frees.py")
    result = run_heatline(
        "-q", "--memory-sampling-window", str(WINDOW), "-o", profile_path, target,
        env=env, timeout=300,
    )
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    frees = json.loads(result.stdout.decode().splitlines()[-1])
    for domain in ("mem_free", "obj_free"):
        assert (frees[domain] is not None and "_native" not in frees[domain]) == unhooked, frees

    data = profile.load(profile_path)
    with open(target) as f:
        numbers = [n for n, text in enumerate(f, 1) if TAG in text]
    assert len(numbers) == 3
    lines = {line["line"]: line for line in data["files"][target]["lines"]}
    samples = 0
    for number in numbers:
        line = lines[number]
        allocated = line["alloc_python_bytes"]
        # Exactly: a missed free leaves its block's weight (a window or more) in the growth.
        assert line["growth_bytes"] == 0, (allocator, number, line)
        assert line["freed_bytes"] == allocated, (allocator, number, line)
        # What the allocator passes on to RAW for these requests (a sampled block made large
        # enough for pymalloc to hand it on; under the debug hooks, a request near 512 bytes
        # with the header added) is the same memory, not native memory as well.
        assert line["alloc_native_bytes"] == 0, (allocator, number, line)
        samples += allocated // WINDOW
    # The lines allocate about 65 MB over the run (ints 6.4 MB, strs 58 MB, the reallocs
    # about 1 MB), about 4,000 windows: a check that ran on a handful of samples would prove
    # little.
    assert samples > 2_000, samples
