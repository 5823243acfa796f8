"""Wait on a condition with a deadline, never for a fixed time."""

import asyncio
import time
from collections.abc import Callable


async def until(condition: Callable[[], bool], *, timeout: float = 30,
                message: str = "the condition") -> None:
    """Poll `condition` until it holds; fail once `timeout` seconds have passed."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{message} did not hold within {timeout} s")
        await asyncio.sleep(0.01)
