"""A task function the Dask workers import by reference (tests/integration/test_dask_workers.py,
through dask_workers_client.py): its file is the user's code on the worker, so the memory it
allocates is charged to its lines."""


def allocate(count, size):
    """Allocates ``count`` blocks of ``size`` bytes, all held until it returns; returns the
    bytes it allocated."""
    blocks = [bytearray(size) for _ in range(count)]
    return sum(len(block) for block in blocks)
