"""Wait on a condition with a deadline, never for a fixed time."""

import asyncio
import gc
import time
from collections.abc import Awaitable, Callable
from typing import Any


async def until(
    condition: Callable[[], bool], *, timeout: float = 30, message: str = "the condition"
) -> None:
    """Poll `condition` until it holds; fail once `timeout` seconds have passed."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{message} did not hold within {timeout} s")
        await asyncio.sleep(0.01)


async def until_async(
    condition: Callable[[], Awaitable[bool]], *, timeout: float = 30, message: str = "the condition"
) -> None:
    """`until` for a condition that must await (a query)."""
    deadline = time.monotonic() + timeout
    while not await condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{message} did not hold within {timeout} s")
        await asyncio.sleep(0.01)


async def slowest_answer(
    client: Any, path: str, task: "asyncio.Future[Any]", *, every: float = 0.01
) -> float:
    """The longest a GET of `path` (each must answer 200), asked every `every` seconds until
    `task` is done, came later than asked: how long the event loop that serves both (an
    in-process client) was kept from answering."""
    # The test process holds every earlier test's objects: a full collection of that heap,
    # which a server's small heap never needs, would count as the loop kept busy. Collected
    # now, before `task` runs, and kept out of the collections made meanwhile.
    gc.collect()
    gc.freeze()
    try:
        slowest = 0.0
        while not task.done():
            started = time.monotonic()
            await asyncio.sleep(every)  # the pace of the asking; the loop runs the rest meanwhile
            response = await client.get(path)
            assert response.status_code == 200, response.text
            slowest = max(slowest, time.monotonic() - started - every)
        return slowest
    finally:
        gc.unfreeze()
