"""engram_client against a live server: sync and async, errors, retries and fail-open context."""

import uuid
from typing import Any

import httpx
import pytest

from engram_client import AsyncEngramClient, EngramClient, EngramError, RetryPolicy
from tests.support.live_server import free_port

FAST = RetryPolicy(retries=2, base_delay=0.01, max_delay=0.05)


async def test_the_sync_client_stores_finds_and_builds_context(live_url, api_key_for):
    key = await api_key_for("client-sync")
    with EngramClient(live_url, api_key=key, retry=FAST) as engram:
        session = str(uuid.uuid4())
        episode = engram.store_episode(
            "Ann: I moved to Lyon last spring", butler="chat", session_id=session
        )
        fact = engram.store_fact("Ann", "city", "Ann lives in Lyon.")
        rule = engram.store_rule("Greet Ann in French.")
        [stored] = engram.store_episodes([{"content": "Bo: I like tea", "butler": "chat"}])

        found = engram.search("Where did Ann move?", types=["episode"], limit=5)
        recalled = engram.recall("Ann")
        block = engram.context("Write to Ann", butler="chat")
        stats = engram.stats()
        job = engram.job(str(engram.start_job("decay").id))

    assert (episode.butler, str(episode.session_id)) == ("chat", session)
    assert found.results[0].id == episode.id
    assert {hit.id for hit in recalled.results} == {fact.id, rule.id}
    assert "Ann lives in Lyon." in block.context and block.warning is None
    assert stats["facts"]["active"] == 1 and stored.content == "Bo: I like tea"
    assert job.kind == "decay"


async def test_the_async_client_does_the_same(live_url, api_key_for):
    key = await api_key_for("client-async")
    async with AsyncEngramClient(live_url, api_key=key, retry=FAST) as engram:
        fact = await engram.store_fact("Bo", "drink", "Bo drinks green tea.")
        found = await engram.search("green tea", types=["fact"])
        block = await engram.context("What does Bo drink?", butler="chat")
    assert found.results[0].id == fact.id
    assert "Bo drinks green tea." in block.context


async def test_bad_input_is_an_error_naming_the_field(live_url, api_key_for):
    key = await api_key_for("client-errors")
    with (
        EngramClient(live_url, api_key=key, retry=FAST) as engram,
        pytest.raises(EngramError) as raised,
    ):
        engram.store_fact("Ann", "city", "   ")
    assert raised.value.status == 422
    assert "content" in str(raised.value)


def test_context_fails_open_when_the_service_is_down():
    with EngramClient(f"http://127.0.0.1:{free_port()}", retry=FAST, timeout=2) as engram:
        block = engram.context("anything", butler="chat")
        assert (block.context, block.items) == ("", [])
        assert block.warning is not None and "unavailable" in block.warning
        with pytest.raises(httpx.ConnectError):
            engram.search("anything")
        with pytest.raises(httpx.ConnectError):
            engram.context("anything", butler="chat", fail_open=False)


def _scripted(*statuses: int) -> tuple[httpx.MockTransport, list[int]]:
    """A transport answering with `statuses` in turn (then 200), counting calls."""
    calls: list[int] = []

    def answer(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        status = statuses[len(calls) - 1] if len(calls) <= len(statuses) else 200
        if status == 200:
            return httpx.Response(200, json={"mode": "hybrid", "results": []})
        return httpx.Response(
            status,
            headers={"Retry-After": "0"},
            json={"title": "busy", "status": status, "detail": "slow down"},
        )

    return httpx.MockTransport(answer), calls


def test_429_and_503_are_retried_then_succeed():
    transport, calls = _scripted(429, 503)
    with EngramClient("http://engram.test", retry=FAST, transport=transport) as engram:
        assert engram.search("x").results == []
    assert len(calls) == 3


def test_retries_stop_after_the_policy_and_raise_the_problem():
    transport, calls = _scripted(429, 429, 429, 429)
    with (
        EngramClient("http://engram.test", retry=FAST, transport=transport) as engram,
        pytest.raises(EngramError) as raised,
    ):
        engram.search("x")
    assert raised.value.status == 429 and len(calls) == FAST.retries + 1


def test_a_422_is_not_retried():
    transport, calls = _scripted(422)
    with (
        EngramClient("http://engram.test", retry=FAST, transport=transport) as engram,
        pytest.raises(EngramError),
    ):
        engram.search("x")
    assert len(calls) == 1


def test_retry_after_is_obeyed_up_to_the_cap():
    policy = RetryPolicy(max_delay=2.0)
    response: Any = httpx.Response(429, headers={"Retry-After": "30"})
    assert policy.delay(0, response) == 2.0
    assert 0.25 <= policy.delay(0, None) <= 0.5


async def test_the_clients_send_filters_to_search_recall_and_context(live_url, api_key_for):
    key = await api_key_for("client-filter")
    with EngramClient(live_url, api_key=key, retry=FAST) as engram:
        kept = engram.store_fact("Ann", "city", "Ann lives in Lyon.", tags=["crm"])
        engram.store_fact("Ann", "town", "Ann grew up in a town near Lyon.", tags=["chat"])
        found = engram.search("Where does Ann live?", filter={"tags": "crm"})
        recalled = engram.recall("Ann Lyon", filter={"tags": {"$in": ["crm"]}})
        block = engram.context("Write to Ann", butler="chat", filter={"tags": "crm"})
    async with AsyncEngramClient(live_url, api_key=key, retry=FAST) as engram_async:
        block_async = await engram_async.context(
            "Write to Ann", butler="chat", filter={"tags": {"$ne": "crm"}}
        )
    assert [hit.id for hit in found.results] == [kept.id]
    assert [hit.id for hit in recalled.results] == [kept.id]
    assert "Lyon." in block.context and "grew up" not in block.context
    assert "grew up" in block_async.context and "Ann lives in Lyon." not in block_async.context
