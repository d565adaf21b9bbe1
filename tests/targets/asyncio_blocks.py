"""asyncio: each time the event loop blocks, the block belongs to the await whose timer or I/O
ended it, not to every task that happened to be waiting. Each task stamps its awaits with
time.perf_counter, so the true block of every await line is known in the same run; written as
JSON to argv[1]: {name: seconds}, NAME and NAME_low bounding the loop's blocked time that
belongs to the line (the block cannot start before the tasks started waiting, nor end before
its timer or the other thread's write).

  three      three tasks wait together: one sleeps 0.7 s, one awaits an Event, one sleeps
             0.75 s and then sets the Event. The loop blocks twice: until the first sleep's
             timer (0.7 s, the first sleep's), then until the second's (0.05 s, the second
             sleep's). The Event ends its wait without a block: the timer's task sets it and the
             loop runs its task at once, so it gets none (an even split would give it a third
             of the first block and half of the second, 0.26 s).
  idle       twenty tasks await what never happens while the program runs (Events never set,
             futures never resolved, hour-long sleeps, reads of sockets nobody writes to), and
             one task awaits a 0.5 s timer, then a read whose data another thread writes after
             0.4 s: every block is ended by the one task's timer or read, so its two lines get
             all of the loop's blocked time (slow_timer, slow_read) and the idle lines none.
"""

import asyncio
import json
import socket
import sys
import threading
import time

TRUTH = {}
STAMPS = {}


async def sleeping():
    STAMPS["a_start"] = time.perf_counter()
    await asyncio.sleep(0.7)  # the sleeping await
    STAMPS["a_end"] = time.perf_counter()


async def eventual(event):
    await event.wait()  # the event's await


async def timer_then_set(event):
    STAMPS["c_start"] = time.perf_counter()
    await asyncio.sleep(0.75)  # the timer's await
    STAMPS["c_end"] = time.perf_counter()
    event.set()


async def three():
    event = asyncio.Event()
    await asyncio.gather(sleeping(), eventual(event), timer_then_set(event))
    s = STAMPS
    # The first block starts once all three wait (after c_start) and ends at the first timer
    # (at least 0.7 s after a_start, and before a_end); the second starts after the first
    # ended and ends at the second timer (at least 0.75 s after c_start, before c_end).
    TRUTH["sleeping"] = s["a_end"] - s["a_start"]
    TRUTH["sleeping_low"] = s["a_start"] + 0.7 - s["c_start"]
    TRUTH["timer"] = s["c_end"] - (s["a_start"] + 0.7)
    TRUTH["timer_low"] = s["c_start"] + 0.75 - s["a_end"]


async def idle_event(event):
    await event.wait()  # an idle event's await


async def idle_future(future):
    await future  # an idle future's await


async def idle_sleep():
    await asyncio.sleep(3600)  # an idle sleep's await


async def idle_read(reader):
    await reader.read(1)  # an idle read's await


def write_later(sock, seconds):
    time.sleep(seconds)
    STAMPS["written"] = time.perf_counter()
    sock.send(b"x")


async def slow(reader, writer_sock):
    start = time.perf_counter()
    await asyncio.sleep(0.5)  # the slow timer's await
    middle = time.perf_counter()
    TRUTH["slow_timer"], TRUTH["slow_timer_low"] = middle - start, 0.5
    thread = threading.Thread(target=write_later, args=(writer_sock, 0.4))
    thread.start()  # waits for the thread to start: on a busy machine, a while
    started = time.perf_counter()
    await reader.read(1)  # the slow read's await
    end = time.perf_counter()
    TRUTH["slow_read"], TRUTH["slow_read_low"] = end - started, STAMPS["written"] - started
    thread.join()


async def idle():
    loop = asyncio.get_running_loop()
    pairs, tasks = [], []
    for _ in range(5):
        tasks.append(asyncio.ensure_future(idle_event(asyncio.Event())))
        tasks.append(asyncio.ensure_future(idle_future(loop.create_future())))
        tasks.append(asyncio.ensure_future(idle_sleep()))
        ours, theirs = socket.socketpair()
        pairs.append(theirs)
        reader, writer = await asyncio.open_connection(sock=ours)
        pairs.append(writer)
        tasks.append(asyncio.ensure_future(idle_read(reader)))
    ours, theirs = socket.socketpair()
    reader, writer = await asyncio.open_connection(sock=ours)
    await asyncio.sleep(0)  # every idle task is waiting
    await slow(reader, theirs)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    writer.close()
    theirs.close()
    for other in pairs:
        other.close()


async def main():
    await three()
    await idle()


if __name__ == "__main__":
    asyncio.run(main())
    with open(sys.argv[1], "w") as f:
        json.dump(TRUTH, f)
