"""Fixtures of the client tests: an async client on the live server, for the framework
adapters."""

from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from engram_client import AsyncEngramClient, RetryPolicy


@pytest.fixture
async def engram(
    live_url: str, api_key_for: Callable[[str], Awaitable[str]]
) -> AsyncIterator[AsyncEngramClient]:
    """An async client of a tenant of its own on the live server, retrying twice, quickly."""
    key = await api_key_for("adapters")
    retry = RetryPolicy(retries=2, base_delay=0.01)
    async with AsyncEngramClient(live_url, api_key=key, retry=retry) as client:
        yield client
