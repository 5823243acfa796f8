"""Work repeated every so many seconds in a background task, until stopped."""

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable


class Periodic:
    """Runs `work` every `seconds` (the first time one interval after `start`) in a task
    named `name`; sooner when `wake`, asked every `check_seconds` meanwhile, says so."""

    def __init__(
        self,
        name: str,
        seconds: float,
        work: Callable[[], Awaitable[None]],
        *,
        wake: Callable[[], bool] | None = None,
        check_seconds: float = 1.0,
    ) -> None:
        self.name = name
        self.seconds = seconds
        self.work = work
        self.wake = wake
        self.check_seconds = check_seconds
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start repeating in the background."""
        self._task = asyncio.create_task(self._repeat(), name=self.name)

    async def _repeat(self) -> None:
        while True:
            await self._pause()
            await self.work()

    async def _pause(self) -> None:
        deadline = time.monotonic() + self.seconds
        while (left := deadline - time.monotonic()) > 0:
            if self.wake is not None and self.wake():
                return
            await asyncio.sleep(left if self.wake is None else min(left, self.check_seconds))

    async def stop(self) -> None:
        """Cancel the task, if started, and wait until it has ended."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
