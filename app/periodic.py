"""Work repeated every so many seconds in a background task, until stopped."""

import asyncio
import contextlib
from collections.abc import Awaitable, Callable


class Periodic:
    """Runs `work` every `seconds` (the first time one interval after `start`) in a task
    named `name`."""

    def __init__(self, name: str, seconds: float, work: Callable[[], Awaitable[None]]) -> None:
        self.name = name
        self.seconds = seconds
        self.work = work
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start repeating in the background."""
        self._task = asyncio.create_task(self._repeat(), name=self.name)

    async def _repeat(self) -> None:
        while True:
            await asyncio.sleep(self.seconds)
            await self.work()

    async def stop(self) -> None:
        """Cancel the task, if started, and wait until it has ended."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
