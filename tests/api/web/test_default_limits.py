"""The limits docs/operations.md and docs/configuration.md state apply to a fresh app built
with the default settings: per key 100 requests a second in bursts of 200 and 64 MiB of
bodies in flight; per address 10 requests a second in bursts of 100 with keys not yet known
valid; bodies of at most 32 MiB."""

import asyncio
import secrets
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from app.core.config import LimitSettings, Settings
from app.main import create_app

MiB = 1024 * 1024


class FrozenClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def fresh(settings: Settings, app: Any) -> AsyncIterator[tuple[Any, FrozenClock]]:
    """A new app with the default limits, its limiter on a clock that moves when told."""
    assert settings.limits == LimitSettings()
    fresh_app = create_app(settings)
    clock = FrozenClock()
    fresh_app.state.caller_limits.clock = clock
    async with fresh_app.router.lifespan_context(fresh_app):
        yield fresh_app, clock


def http(app: Any, secret: str | None = None) -> httpx.AsyncClient:
    headers = {"X-API-Key": secret} if secret else {}
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://engram.test", headers=headers
    )


async def statuses(client: httpx.AsyncClient, count: int, path: str = "/v1/facts") -> list[int]:
    return [(await client.get(path, params={"limit": 1})).status_code for _ in range(count)]


async def test_a_key_has_100_requests_a_second_in_bursts_of_200(fresh, api_key_for):
    app, clock = fresh
    async with http(app, await api_key_for("acme")) as client:
        assert await statuses(client, 200) == [200] * 200
        refused = await client.get("/v1/facts")
        assert refused.status_code == 429
        assert refused.headers["retry-after"] == "1"
        clock.now += 1.0
        assert await statuses(client, 100) == [200] * 100
        assert (await client.get("/v1/facts")).status_code == 429


async def test_unknown_keys_have_10_a_second_in_bursts_of_100_per_address(fresh):
    app, clock = fresh
    async with http(app) as client:

        def unknown() -> dict[str, str]:
            return {"X-API-Key": "egk_" + secrets.token_urlsafe(32)}

        answers = [
            (await client.get("/v1/facts", headers=unknown())).status_code for _ in range(101)
        ]
        assert answers == [401] * 100 + [429]
        clock.now += 1.0
        answers = [
            (await client.get("/v1/facts", headers=unknown())).status_code for _ in range(11)
        ]
        assert answers == [401] * 10 + [429]


async def test_a_key_may_have_64_mib_of_bodies_in_flight(fresh, api_key_for):
    app, _ = fresh
    release = asyncio.Event()

    async def held_body(reading: asyncio.Event) -> AsyncIterator[bytes]:
        reading.set()  # the body is being read: the limits have counted its length
        yield b'{"content": "'
        await release.wait()
        yield b'x", "butler": "b"}'

    async with http(app, await api_key_for("acme")) as client:
        assert (await client.get("/v1/facts")).status_code == 200  # the key is now known
        held = []
        try:
            for _ in range(2):  # two bodies of 32 MiB, the largest allowed
                reading = asyncio.Event()
                held.append(
                    asyncio.create_task(
                        client.post(
                            "/v1/episodes",
                            content=held_body(reading),
                            headers={
                                "content-type": "application/json",
                                "content-length": str(32 * MiB),
                            },
                        )
                    )
                )
                await asyncio.wait_for(reading.wait(), timeout=10)
            refused = await client.post("/v1/episodes", json={"content": "x", "butler": "b"})
        finally:
            release.set()
            done = await asyncio.gather(*held)
        assert refused.status_code == 429
        assert refused.json()["errors"][0]["field"] == "body"
        assert [response.status_code for response in done] == [201, 201]
        too_large = await client.post(
            "/v1/episodes",
            content=b"x",
            headers={"content-type": "application/json", "content-length": str(32 * MiB + 1)},
        )
        assert too_large.status_code == 413
