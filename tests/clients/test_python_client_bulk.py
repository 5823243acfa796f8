"""engram_client against a live server: bulk facts, a bound on requests in flight, and
Retry-After obeyed on 429."""

import asyncio
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from app.core.config import LimitSettings, Settings
from app.main import create_app
from engram_client import AsyncEngramClient, EngramClient, EngramError, RetryPolicy
from tests.support.live_server import serve_in_thread


class InFlight:
    """An ASGI wrapper counting the HTTP requests the app is serving at once."""

    def __init__(self, app: Any) -> None:
        self.app, self.now, self.most = app, 0, 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        self.now += 1
        self.most = max(self.most, self.now)
        try:
            await self.app(scope, receive, send)
        finally:
            self.now -= 1


@pytest.fixture(scope="module")
def counted(settings: Settings) -> Iterator[tuple[str, InFlight]]:
    """A live server with authentication on and no rate limit, its requests counted."""
    app = InFlight(
        create_app(settings.model_copy(update={"limits": LimitSettings(requests_per_second=0)}))
    )
    with serve_in_thread(app) as url:
        yield url, app


@pytest.fixture(scope="module")
def throttled(settings: Settings) -> Iterator[str]:
    """A live server allowing 2 requests a second per key after a burst of 2."""
    app = create_app(
        settings.model_copy(update={"limits": LimitSettings(requests_per_second=2, burst=2)})
    )
    with serve_in_thread(app) as url:
        yield url


async def test_bulk_facts_store_read_and_delete_in_chunks(counted, api_key_for):
    url, _ = counted
    key = await api_key_for("client-bulk")
    items = [
        {"subject": f"item {n}", "predicate": "is", "content": f"number {n}", "scope": "bulk"}
        for n in range(300)
    ]
    with EngramClient(url, api_key=key) as engram:
        stored = engram.store_facts(items)  # three requests
        assert [r["status"] for r in stored] == [201] * 300
        refs = [{"scope": "bulk", "subject": f"ITEM {n}", "predicate": "is"} for n in (0, 299, 300)]
        got = engram.get_facts(refs * 400)  # two requests
        assert [r["status"] for r in got] == [200, 200, 404] * 400
        assert got[1]["fact"]["content"] == "number 299"
        with pytest.raises(EngramError) as raised:
            engram.store_facts(
                [
                    {"subject": "x", "predicate": "y", "content": "ok"},
                    {"subject": "x", "predicate": "y", "content": " "},
                ]
            )
        assert raised.value.status == 422 and "body.items.1.content" in str(raised.value)
    async with AsyncEngramClient(url, api_key=key) as engram:
        deleted = await engram.delete_facts([{"id": r["fact"]["id"]} for r in stored] + [refs[2]])
        assert [r["status"] for r in deleted] == [204] * 300 + [404]
        assert [r["status"] for r in await engram.get_facts(refs[:1])] == [404]


async def test_the_async_client_keeps_at_most_max_in_flight_requests(counted, api_key_for):
    url, app = counted
    key = await api_key_for("client-in-flight-async")
    app.most = 0
    async with AsyncEngramClient(url, api_key=key, max_in_flight=3) as engram:
        answers = await asyncio.gather(*(engram.stats() for _ in range(60)))
    assert len(answers) == 60 and all("facts" in answer for answer in answers)
    assert 1 <= app.most <= 3


async def test_the_sync_client_keeps_at_most_max_in_flight_across_threads(counted, api_key_for):
    url, app = counted
    key = await api_key_for("client-in-flight-sync")
    app.most = 0
    with (
        EngramClient(url, api_key=key, max_in_flight=2) as engram,
        ThreadPoolExecutor(max_workers=8) as pool,
    ):
        answers = await asyncio.to_thread(
            lambda: list(pool.map(lambda _: engram.stats(), range(40)))
        )
    assert len(answers) == 40
    assert 1 <= app.most <= 2


async def test_429_waits_retry_after_then_succeeds(throttled, api_key_for):
    key = await api_key_for("client-throttled")
    patient = RetryPolicy(retries=6, base_delay=0.01, max_delay=5.0)
    async with AsyncEngramClient(throttled, api_key=key, retry=patient) as engram:
        started = time.monotonic()
        for _ in range(6):
            assert "facts" in await engram.stats()
        waited = time.monotonic() - started
    # 2 at once, then 2 a second: the last 4 need about 2 s, waited on the server's word.
    assert waited >= 1.0
    impatient = RetryPolicy(retries=0)
    with (
        EngramClient(throttled, api_key=key, retry=impatient) as engram,
        pytest.raises(EngramError) as raised,
    ):
        for _ in range(10):
            engram.stats()
    assert raised.value.status == 429
