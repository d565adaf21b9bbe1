"""asyncio on uvloop's event loop (written in C): its waits go to the awaits too. Each await is
timed with time.perf_counter; the truth is written as JSON to argv[1]: {name: seconds}."""

import asyncio
import json
import sys
import time

import uvloop

TRUTH = {}


async def sleeper():
    start = time.perf_counter()
    await asyncio.sleep(0.3)  # the sleeper's await
    TRUTH["sleeper"] = time.perf_counter() - start


async def executor():
    loop = asyncio.get_running_loop()
    start = time.perf_counter()
    await loop.run_in_executor(None, time.sleep, 0.3)  # the executor's await
    TRUTH["executor"] = time.perf_counter() - start


async def main():
    await sleeper()
    await executor()


if __name__ == "__main__":
    if sys.version_info >= (3, 11):
        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            runner.run(main())
    else:
        uvloop.install()
        asyncio.run(main())
    with open(sys.argv[1], "w") as f:
        json.dump(TRUTH, f)
