"""Worker threads compute while the main thread only waits: the main thread puts tasks on a
queue and waits for the results (queue.get, then Thread.join); two worker threads checksum
blocks of data in BlockChecksumWorker.accumulate_checksums_over_every_block_of_the_input, whose
time is spread evenly over sixteen lines (about a sixteenth of the running time each).
hashlib releases the GIL on large buffers, so the workers do not contend for it. Where the
time went is that function, in the worker threads."""

import hashlib
import queue
import threading

BLOCK = bytes(range(256)) * 256  # 64 KiB


class BlockChecksumWorker:
    def accumulate_checksums_over_every_block_of_the_input(self, blocks):
        total = 0
        for _ in range(blocks):
            total ^= hashlib.sha256(BLOCK).digest()[0]
            total ^= hashlib.sha256(BLOCK).digest()[1]
            total ^= hashlib.sha256(BLOCK).digest()[2]
            total ^= hashlib.sha256(BLOCK).digest()[3]
            total ^= hashlib.sha256(BLOCK).digest()[4]
            total ^= hashlib.sha256(BLOCK).digest()[5]
            total ^= hashlib.sha256(BLOCK).digest()[6]
            total ^= hashlib.sha256(BLOCK).digest()[7]
            total ^= hashlib.sha256(BLOCK).digest()[8]
            total ^= hashlib.sha256(BLOCK).digest()[9]
            total ^= hashlib.sha256(BLOCK).digest()[10]
            total ^= hashlib.sha256(BLOCK).digest()[11]
            total ^= hashlib.sha256(BLOCK).digest()[12]
            total ^= hashlib.sha256(BLOCK).digest()[13]
            total ^= hashlib.sha256(BLOCK).digest()[14]
            total ^= hashlib.sha256(BLOCK).digest()[15]
        return total

    def serve(self, tasks, results):
        while True:
            blocks = tasks.get()
            if blocks is None:
                return
            results.put(self.accumulate_checksums_over_every_block_of_the_input(blocks))


if __name__ == "__main__":
    tasks, results = queue.Queue(), queue.Queue()
    threads = [threading.Thread(target=BlockChecksumWorker().serve, args=(tasks, results))
               for _ in range(2)]
    for thread in threads:
        thread.start()
    for _ in range(16):
        tasks.put(60)
    checksum = 0
    for _ in range(16):
        checksum ^= results.get()  # the main thread waits here
    for thread in threads:
        tasks.put(None)
    for thread in threads:
        thread.join()
    print(checksum)
