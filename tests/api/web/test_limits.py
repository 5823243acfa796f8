"""Limits through HTTP: 429 with Retry-After per key, per address for keys not yet found live
and for the console, and revoked keys within the cache bound."""

import secrets
from contextlib import contextmanager

import pytest

from app.core.config import LimitSettings
from app.core.scope import SYSTEM, scoped_transaction
from app.services import api_keys
from tests.support.console import sign_in


@contextmanager
def limits_set(app, **settings):
    """The app's limits with `settings` (the rest default) and no caller remembered."""
    limits = app.state.caller_limits
    original = limits.settings
    limits.settings = LimitSettings(**settings)
    limits.clear()
    try:
        yield limits
    finally:
        limits.settings = original
        limits.clear()


@pytest.fixture
def tight_limits(app):
    with limits_set(app, requests_per_second=0.5, burst=2):
        yield


async def test_past_the_request_rate_a_key_gets_429_with_retry_after(client, tight_limits):
    assert (await client.get("/v1/facts")).status_code == 200
    assert (await client.get("/v1/facts")).status_code == 200
    refused = await client.get("/v1/facts")
    assert refused.status_code == 429
    assert refused.headers["content-type"].startswith("application/problem+json")
    assert int(refused.headers["retry-after"]) >= 1
    assert refused.json()["errors"][0]["field"] == "requests"


async def test_health_checks_are_never_limited(client, tight_limits):
    statuses = {(await client.get("/healthz")).status_code for _ in range(5)}
    assert statuses == {200}


async def test_a_revoked_key_works_until_the_cache_entry_is_stale(app, anonymous_client, sql):
    async with scoped_transaction(app.state.sessionmaker, SYSTEM) as session:
        minted = await api_keys.create_key(session, tenant_id="acme")
    headers = {"X-API-Key": minted.secret}
    assert (await anonymous_client.get("/v1/facts", headers=headers)).status_code == 200
    await sql("UPDATE api_keys SET revoked_at = now() WHERE id = :id", id=minted.record.id)
    cache = app.state.tenant_cache
    assert (await anonymous_client.get("/v1/facts", headers=headers)).status_code == 200
    real_clock = cache.clock
    cache.clock = lambda: real_clock() + cache.ttl_seconds
    try:
        assert (await anonymous_client.get("/v1/facts", headers=headers)).status_code == 401
    finally:
        cache.clock = real_clock


async def test_a_chunked_body_past_the_bytes_in_flight_gets_429_naming_the_body(app, client):
    limits = app.state.caller_limits
    original = limits.settings
    limits.settings = LimitSettings(bytes_in_flight=100)

    async def chunks():
        yield b'{"content": "' + b"x" * 150
        yield b"y" * 150 + b'", "butler": "b"}'

    try:
        refused = await client.post(
            "/v1/episodes", content=chunks(), headers={"content-type": "application/json"}
        )
        # What the refused request had in flight was given back: the next body passes.
        accepted = await client.post("/v1/episodes", json={"content": "x" * 300, "butler": "b"})
    finally:
        limits.settings = original
    assert refused.status_code == 429
    assert refused.headers["content-type"].startswith("application/problem+json")
    assert refused.json()["errors"][0]["field"] == "body"
    assert accepted.status_code == 201


@pytest.fixture
def strict_unverified(app):
    """Three requests with keys not yet known valid per address, then next to none."""
    with limits_set(app, unverified_requests_per_second=0.001, unverified_burst=3) as limits:
        yield limits


async def test_random_keys_are_refused_past_the_address_burst(
    client, anonymous_client, strict_unverified
):
    # The client's key is verified by its first request (which the address pays for).
    assert (await client.get("/v1/facts")).status_code == 200
    statuses = []
    for _ in range(20):
        answer = await anonymous_client.get(
            "/v1/facts", headers={"X-API-Key": "egk_" + secrets.token_urlsafe(32)}
        )
        statuses.append(answer.status_code)
    assert statuses == [401] * 2 + [429] * 18
    assert answer.json()["errors"][0]["field"] == "requests"
    assert int(answer.headers["retry-after"]) >= 1
    # A key known valid counts against itself only, so it is still served.
    assert (await client.get("/v1/facts")).status_code == 200
    assert len(strict_unverified) <= 3


async def test_console_sign_in_is_limited_by_address(anonymous_client, strict_unverified):
    answers = [
        (await sign_in(anonymous_client, "egk_" + secrets.token_urlsafe(32))).status_code
        for _ in range(5)
    ]
    assert answers == [401] * 3 + [429] * 2


async def test_console_pages_are_limited_by_address(anonymous_client, tight_limits):
    statuses = [(await anonymous_client.get("/ui")).status_code for _ in range(3)]
    assert statuses == [200, 200, 429]


async def test_a_body_without_a_live_key_is_refused_before_it_is_read(client, anonymous_client):
    pulled: list[int] = []

    async def chunks():
        for index in range(4):
            pulled.append(index)
            yield b"x" * 1024

    for key in ({}, {"X-API-Key": "egk_" + secrets.token_urlsafe(32)}):
        pulled.clear()
        answer = await anonymous_client.post(
            "/v1/episodes", content=chunks(), headers={"content-type": "application/json", **key}
        )
        assert answer.status_code == 401
        assert answer.headers["www-authenticate"] == 'Bearer realm="engram"'
        assert answer.json()["errors"][0]["field"] == "Authorization"
        assert pulled == []
    stored = await client.post("/v1/episodes", json={"content": "read", "butler": "b"})
    assert stored.status_code == 201
