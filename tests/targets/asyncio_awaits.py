"""asyncio: where the event loop's waiting goes. One coroutine after another, each
timing its own awaits with time.perf_counter, so the truth of every await line is measured in
the same run; written as JSON to argv[1]: {name: seconds}. Beside each await's wall time, NAME_low
is the part of it the loop must have spent waiting: the wall time less the time from the wait's
end to the task's resumption (the loop's callbacks, and the queue for a CPU on a busy machine,
which run on the loop's own frames, not the task's).

  cpu        a coroutine that computes (pure Python, no await inside): Python time
  sleeper    await asyncio.sleep: suspended, the loop waits on a timer
  executor   await loop.run_in_executor(None, sleep_then_stamp, ...): the loop waits on a
             thread that sleeps
  alternate  two awaits in turn, 30 ms then 10 ms, eight times: a wait charged after the
             task moved on to its next await would go to the other line
  pair       gather() of two coroutines sleeping together: the main task awaits the gather
             (it waits on tasks, so gets none of the wait) and the two share the joint wait
  plain      an event loop on a second thread, whose waits stay with the line that runs it
"""

import asyncio
import json
import sys
import threading
import time

TRUTH = {}


def burn(n):
    total = 0
    for i in range(n):
        total += i % 7
    return total


async def cpu():
    start = time.perf_counter()
    burn(1_500_000)
    TRUTH["cpu"] = time.perf_counter() - start


async def sleeper():
    start = time.perf_counter()
    await asyncio.sleep(0.4)  # the sleeper's await
    TRUTH["sleeper"] = time.perf_counter() - start
    TRUTH["sleeper_low"] = 0.4  # the timer cannot fire earlier


def sleep_then_stamp(seconds):
    time.sleep(seconds)
    return time.perf_counter()


async def executor():
    loop = asyncio.get_running_loop()
    start = time.perf_counter()
    done = await loop.run_in_executor(None, sleep_then_stamp, 0.3)  # the executor's await
    TRUTH["executor"] = time.perf_counter() - start
    TRUTH["executor_low"] = done - start  # the worker's sleep ended at done


async def alternate():
    long_s = short_s = 0.0
    for _ in range(8):
        start = time.perf_counter()
        await asyncio.sleep(0.03)  # the long await
        middle = time.perf_counter()
        await asyncio.sleep(0.01)  # the short await
        long_s += middle - start
        short_s += time.perf_counter() - middle
    TRUTH["alternate_long"], TRUTH["alternate_short"] = long_s, short_s
    TRUTH["alternate_long_low"], TRUTH["alternate_short_low"] = 8 * 0.03, 8 * 0.01


async def pair_a():
    await asyncio.sleep(0.3)  # pair a's await


async def pair_b():
    await asyncio.sleep(0.3)  # pair b's await


async def pair():
    start = time.perf_counter()
    await asyncio.gather(pair_a(), pair_b())  # the gathering await
    TRUTH["pair"] = time.perf_counter() - start
    TRUTH["pair_low"] = 0.3


async def main():
    await cpu()
    await sleeper()
    await executor()
    await alternate()
    await pair()


def other_thread():
    start = time.perf_counter()
    asyncio.run(asyncio.sleep(0.3))  # a loop on another thread
    TRUTH["plain"] = time.perf_counter() - start


if __name__ == "__main__":
    start = time.perf_counter()
    asyncio.run(main())  # the main loop
    TRUTH["main"] = time.perf_counter() - start
    if "plain" in sys.argv[2:]:
        thread = threading.Thread(target=other_thread)
        thread.start()
        thread.join()
    with open(sys.argv[1], "w") as f:
        json.dump(TRUTH, f)
