"""Six threads that wait the whole run (a pool's helper threads, a queue's feeder) while the
main thread computes for about 0.6 s of CPU time: the flame graph must not be their waiting.
It prints the main thread's wall time of the busy part and the idle threads' native ids and
names."""

import json
import threading
import time

stop = threading.Event()


def idle():
    stop.wait()


def busy(cpu_seconds):
    start = time.thread_time()
    total = 0
    while time.thread_time() - start < cpu_seconds:
        total += sum(range(200))
    return total


waiters = [threading.Thread(target=idle) for _ in range(6)]
for waiter in waiters:
    waiter.start()
wall = time.perf_counter()
busy(0.6)
wall = time.perf_counter() - wall
stop.set()
for waiter in waiters:
    waiter.join()
print(json.dumps({"busy_wall_s": wall, "idle": [waiter.native_id for waiter in waiters],
                  "idle_names": [waiter.name for waiter in waiters]}))
