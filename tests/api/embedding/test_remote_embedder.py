"""The service with a remote embedder: memories are embedded over HTTP and found; a memory
search whose query the endpoint cannot embed in time is served by keyword and says so, other
searches answer 503 with Retry-After, never a 500; a write is stored without vectors at once
when the endpoint fails or is slow."""

import asyncio
import re
import threading
import time
from typing import Any

import pytest

from tests.support.console import overview_of
from tests.support.embeddings_stub import Answer, embeddings_stub
from tests.support.factories import store_episode
from tests.support.model_app import backlog_of, client_of, remote_embedder, started
from tests.support.waiting import until

# The app's model: an endpoint with prefixes, that a write waits on for a second.
ENDPOINT = {"write_wait_seconds": 1.0, "query_prefix": "query: ", "document_prefix": "passage: "}


async def test_memories_are_embedded_by_the_endpoint_and_found(client, remote_model, sql):
    stub = remote_model(**ENDPOINT)
    episode = await store_episode(client, "Ann moored her boat at the harbour")
    assert "passage: Ann moored her boat at the harbour" in stub.inputs()
    response = await client.post(
        "/v1/search", json={"query": "Ann moored her boat", "mode": "semantic"}
    )
    assert response.status_code == 200, response.text
    assert "query: Ann moored her boat" in stub.inputs()
    [row] = await sql(
        "SELECT v.model_name FROM episodes e JOIN embedding_versions v "
        "ON v.id = e.embedding_version_id WHERE e.content LIKE 'Ann moored%'"
    )
    assert row["model_name"] == "stub-embedding"
    assert response.json()["results"][0]["id"] == episode["id"]


async def test_a_run_search_the_endpoint_cannot_embed_is_a_503_with_retry_after(
    client, remote_model
):
    stub = remote_model(**ENDPOINT)
    stub.answer(
        Answer(503, {"Retry-After": "0"}, '{"error": "loading"}'),
        Answer(429, {"Retry-After": "7"}, '{"error": "slow down"}'),
    )
    found = await client.post("/v1/runs/search", json={"query": "lost"})
    assert found.status_code == 503
    assert found.headers["content-type"] == "application/problem+json"
    assert found.headers["Retry-After"] == "7"
    assert stub.base_url not in found.text  # the endpoint is the operator's business


async def test_a_write_the_endpoint_fails_is_stored_and_found_by_keyword(client, remote_model, sql):
    stub = remote_model(**ENDPOINT)
    stub.answer(*[Answer(503, {"Retry-After": "0"}, '{"error": "loading"}')] * 2)
    stored = await client.post(
        "/v1/episodes", json={"content": "Ann moored her boat at the harbour", "butler": "chat"}
    )
    assert stored.status_code == 201, stored.text
    [row] = await sql(
        "SELECT embedding IS NULL AS unembedded FROM episodes WHERE id = :id",
        id=stored.json()["id"],
    )
    assert row["unembedded"]
    found = await client.post("/v1/search", json={"query": "harbour", "mode": "keyword"})
    assert [r["id"] for r in found.json()["results"]] == [stored.json()["id"]]
    gate = threading.Event()
    stub.answer(Answer(gate=gate))
    started = time.monotonic()
    fact = await client.post(
        "/v1/facts", json={"subject": "Ann", "predicate": "owns", "content": "Ann owns a boat"}
    )
    gate.set()
    assert fact.status_code == 201, fact.text
    assert time.monotonic() - started < 4  # the write waited write_wait_seconds, not more


async def backlog_emptied(http: Any, failure: str, seconds: float = 10) -> None:
    """Wait until /readyz reports no memory waiting for its vectors; fail after `seconds`."""
    deadline = time.monotonic() + seconds
    while (await http.get("/readyz")).json()["embedding_backlog"]:
        assert time.monotonic() < deadline, failure
        await asyncio.sleep(0.05)


async def test_the_backlog_embeds_what_writes_stored_without_vectors(scratch_url, monkeypatch):
    with embeddings_stub(dimensions=24) as stub:
        async with started(
            scratch_url, remote_embedder(stub), monkeypatch, embedding_backlog_seconds=1
        ) as application:
            backlog = backlog_of(application)
            await backlog.stop()  # the test runs its passes
            async with client_of(application) as http:
                stub.answer(Answer(503, {}, '{"error": "down"}'))
                stored = await http.post(
                    "/v1/episodes",
                    json={"content": "Ann moored her boat at the harbour", "butler": "chat"},
                )
                assert stored.status_code == 201, stored.text
                assert (await http.get("/readyz")).json()["embedding_backlog"] == 1
                assert "engram_embedding_backlog 1.0" in (await http.get("/metrics")).text

                stub.answer(Answer(503, {}, '{"error": "still down"}'))
                assert await backlog.run_once() is None
                assert backlog.wait == 2  # twice as long after a failed pass
                assert await backlog.run_once() == {"episodes": 1, "facts": 0, "rules": 0}
                assert backlog.wait == 1
                assert (await http.get("/readyz")).json()["embedding_backlog"] == 0
                found = await http.post(
                    "/v1/search",
                    json={"query": "Ann moored her boat at the harbour", "mode": "semantic"},
                )
                [hit] = found.json()["results"]
                assert hit["id"] == stored.json()["id"]
                assert hit["similarity"] == pytest.approx(1.0, abs=1e-3)

                # No row stays locked while the model runs: deleting a memory the backlog
                # is embedding goes through at once, and the pass leaves it out.
                stub.answer(Answer(503, {}, '{"error": "down"}'))
                doomed = (
                    await http.post(
                        "/v1/episodes", json={"content": "Bob baked bread", "butler": "chat"}
                    )
                ).json()["id"]
                gate = threading.Event()
                stub.answer(Answer(gate=gate))
                asked = len(stub.received)
                running = asyncio.create_task(backlog.run_once())
                await until(lambda: len(stub.received) > asked)
                deleted = await asyncio.wait_for(http.delete(f"/v1/episodes/{doomed}"), 5)
                assert deleted.status_code == 204, deleted.text
                gate.set()
                assert await running == {"episodes": 0, "facts": 0, "rules": 0}


async def test_the_backlog_runs_as_soon_as_the_model_answers_again(scratch_url, monkeypatch):
    monkeypatch.setattr("app.worker.reembed.RECOVERY_CHECK_SECONDS", 0.05)
    monkeypatch.setattr("app.embedding.remote.FAILED_RECENTLY_SECONDS", 0)
    with embeddings_stub(dimensions=24) as stub:
        async with started(
            scratch_url, remote_embedder(stub), monkeypatch, embedding_backlog_seconds=60
        ) as application:
            backlog = backlog_of(application)
            await backlog.stop()  # its first pass is the test's
            async with client_of(application) as http:
                stub.answer(Answer(503, {}, '{"error": "down"}'))
                await store_episode(http, "Ann moored her boat at the harbour")
                stub.answer(Answer(503, {}, '{"error": "still down"}'))
                assert await backlog.run_once() is None
                backlog.start()  # its next pass is a minute away
                await store_episode(http, "Bob baked bread")  # the model answers again
                await backlog_emptied(http, "no pass after the model's answer")


async def test_a_write_a_slow_endpoint_could_not_wait_for_is_embedded_soon_after(
    scratch_url, monkeypatch
):
    monkeypatch.setattr("app.worker.reembed.RECOVERY_CHECK_SECONDS", 0.05)
    with embeddings_stub(dimensions=24) as stub:
        embedder = remote_embedder(stub)
        # The backlog's first pass is a minute away.
        async with started(
            scratch_url, embedder, monkeypatch, embedding_backlog_seconds=60
        ) as application:
            embedder.write_wait_seconds = 0.2
            async with client_of(application) as http:
                gate = threading.Event()
                stub.answer(Answer(gate=gate))  # slower than the write waits
                await store_episode(http, "Ann moored her boat at the harbour")
                gate.set()
                await backlog_emptied(http, "the write still has no vectors")


async def test_the_service_starts_while_the_endpoint_is_down_and_keeps_every_write(
    scratch_url, monkeypatch
):
    with embeddings_stub(dimensions=24) as stub:
        async with started(scratch_url, remote_embedder(stub), monkeypatch) as application:
            async with client_of(application) as http:
                await store_episode(http, "Ann moored her boat at the harbour")
        stub.answer(*[Answer(503, {}, '{"error": "down"}')] * 20)
        # No dimension is configured and the endpoint does not answer: the one recorded for
        # the model is taken.
        async with started(scratch_url, remote_embedder(stub), monkeypatch) as application:
            assert application.state.embedder.dimensions == 24
            async with client_of(application) as http:
                await store_episode(http, "Bob baked bread")
                assert (await http.get("/readyz")).json()["embedding_backlog"] == 1
                found = await http.post("/v1/search", json={"query": "bread"})
                assert [r["content"] for r in found.json()["results"]] == ["Bob baked bread"]


async def test_writes_and_searches_do_not_wait_on_an_endpoint_that_just_failed(
    app, client, remote_model, monkeypatch
):
    stub = remote_model(**ENDPOINT)
    app.state.embedder.load()  # as the service's start does
    stub.answer(*[Answer(503, {}, '{"error": "down"}')] * 2)
    await store_episode(client, "Ann moored her boat at the harbour")  # fails both attempts
    asked = len(stub.received)
    started = time.monotonic()
    stored = await store_episode(client, "Bob baked bread")
    found = (await client.post("/v1/search", json={"query": "bread"})).json()
    assert time.monotonic() - started < 1  # neither waited on the endpoint
    assert len(stub.received) == asked
    assert found["semantic_skipped"] == "unavailable"
    assert [r["id"] for r in found["results"]] == [stored["id"]]

    monkeypatch.setattr("app.embedding.remote.FAILED_RECENTLY_SECONDS", 0)
    await store_episode(client, "Cat climbed the tree")  # a while later: tried again
    assert len(stub.received) == asked + 1
    assert (await client.post("/v1/search", json={"query": "tree"})).json()[
        "semantic_skipped"
    ] is None


async def test_a_query_the_endpoint_cannot_embed_in_time_is_served_by_keyword(
    app, client, remote_model, monkeypatch
):
    stub = remote_model(**ENDPOINT)
    stored = await store_episode(client, "Ann moored her boat at the harbour")
    gate = threading.Event()
    stub.answer(Answer(gate=gate))
    monkeypatch.setattr(app.state.settings.retrieval, "query_embedding_seconds", 0.3)
    try:
        started = time.monotonic()
        found = await client.post("/v1/search", json={"query": "harbour boat"})
        took = time.monotonic() - started
    finally:
        gate.set()
    assert found.status_code == 200, found.text
    body = found.json()
    assert (body["mode"], body["semantic_skipped"]) == ("keyword", "timeout")
    assert [r["id"] for r in body["results"]] == [stored["id"]]
    assert took < 3  # the budget, not the endpoint's hang


async def test_a_query_the_endpoint_refuses_is_served_by_keyword_and_says_so(client, remote_model):
    stub = remote_model(**ENDPOINT)
    stored = await store_episode(client, "Ann moored her boat at the harbour")
    stub.answer(*[Answer(503, {"Retry-After": "0"}, '{"error": "loading"}')] * 2)
    found = await client.post("/v1/search", json={"query": "harbour", "mode": "semantic"})
    assert found.status_code == 200, found.text
    body = found.json()
    assert (body["mode"], body["semantic_skipped"]) == ("keyword", "unavailable")
    assert [r["id"] for r in body["results"]] == [stored["id"]]


async def test_memories_waiting_for_vectors_show_on_the_console_overview(app, client, remote_model):
    stub = remote_model(**ENDPOINT)
    stub.answer(*[Answer(503, {"Retry-After": "0"}, '{"error": "loading"}')] * 2)
    stored = await client.post(
        "/v1/episodes", json={"content": "Ann sailed to Brest", "butler": "chat"}
    )
    assert stored.status_code == 201, stored.text
    overview = await overview_of(app)
    waiting = re.search(r'id="awaiting-vectors">(\d+)<', overview)
    assert waiting is not None and int(waiting.group(1)) >= 1
