"""asyncio on uvloop's event loop (written in C): its waits go to the awaits too. The sleeper
and the executor of asyncio_awaits.py, each timing its own await, run on uvloop; the truth is
written as JSON to argv[1]: {name: seconds}."""

import asyncio
import json
import sys

import uvloop
from asyncio_awaits import TRUTH, executor, sleeper


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
