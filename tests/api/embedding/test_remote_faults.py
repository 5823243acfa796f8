"""A remote embedding model at fault: a text it refuses or answers badly fails only its own
tenant's write and is set aside by the backlog; recall and context answer from the keyword
list within the query budget when it hangs, drips or is down."""

import asyncio
import logging
import threading
import time
from typing import Any

import pytest

from app.worker.reembed import embed_backlog
from tests.support.embeddings_stub import Answer, EmbeddingsStub, embeddings_stub
from tests.support.factories import store_episode, store_fact
from tests.support.model_app import remote_embedder
from tests.support.waiting import until

DOWN = Answer(503, {"Retry-After": "0"}, '{"error": "loading"}')


# The app's model: an endpoint of one second a request in all, that a write waits on for two
# seconds and a search for half a second.
ENDPOINT = {"write_wait_seconds": 2.0, "timeout_seconds": 1.0, "query_embedding_seconds": 0.5}


async def _unembedded(sql: Any, content: str) -> bool:
    [row] = await sql(
        "SELECT embedding IS NULL AS unembedded FROM episodes WHERE content = :content",
        content=content,
    )
    return bool(row["unembedded"])


async def test_one_tenants_refused_text_changes_nothing_for_another_tenant(
    app, tenant_client, remote_model, sql, monkeypatch
):
    stub = remote_model(**ENDPOINT)
    stub.refused.add("POISON")
    first, second = await tenant_client("t1"), await tenant_client("t2")
    poisoned = "POISON " + "a very long text " * 50
    await store_episode(first, poisoned)  # stored without vectors
    assert await _unembedded(sql, poisoned)
    await store_episode(second, "Bob baked bread in the morning")
    assert not await _unembedded(sql, "Bob baked bread in the morning")
    skipped = [
        (await second.post("/v1/search", json={"query": "bread"})).json()["semantic_skipped"]
        for _ in range(20)
    ]
    assert skipped == [None] * 20

    # The endpoint down a moment: rows of both tenants wait for the backlog beside the
    # refused one, which shares a batch with its tenant's other row.
    stub.standing = DOWN
    await store_episode(first, "Ann moored her boat at the harbour")
    await store_episode(second, "Cat climbed the tree")
    stub.standing = None
    monkeypatch.setattr("app.embedding.remote.FAILED_RECENTLY_SECONDS", 0)

    counts = await embed_backlog(app.state.sessionmaker, app.state.embedder)
    assert counts["episodes"] == 2
    assert not await _unembedded(sql, "Ann moored her boat at the harbour")
    assert not await _unembedded(sql, "Cat climbed the tree")
    [aside] = await sql("SELECT tenant_id, failures, error FROM embedding_failures")
    assert (aside["tenant_id"], aside["failures"]) == ("t1", 1)
    assert "HTTP 400" in aside["error"]
    assert not app.state.embedder.failed_recently
    skipped = [
        (await second.post("/v1/search", json={"query": "tree"})).json()["semantic_skipped"]
        for _ in range(20)
    ]
    assert skipped == [None] * 20

    # Set aside: the next pass does not send it again, and goes on with new rows.
    asked = len(stub.received)
    assert await embed_backlog(app.state.sessionmaker, app.state.embedder) == {
        "episodes": 0,
        "facts": 0,
        "rules": 0,
    }
    assert not any(
        "POISON" in text for request in stub.received[asked:] for text in request.body["input"]
    )


def _fault(stub: EmbeddingsStub, fault: str) -> threading.Event:
    """Make the endpoint hang, drip its answer or be down; the event ends a hang."""
    gate = threading.Event()
    stub.standing = {"hang": Answer(gate=gate), "drip": Answer(drip_seconds=0.05), "down": DOWN}[
        fault
    ]
    return gate


@pytest.mark.parametrize("fault", ["hang", "drip", "down"])
@pytest.mark.parametrize("door", ["recall", "context"])
async def test_recall_and_context_answer_by_keyword_within_the_query_budget(
    client, remote_model, fault, door
):
    stub = remote_model(**ENDPOINT)
    fact = await store_fact(client, "Ann", "moors", "Ann moors her boat at the harbour")
    gate = _fault(stub, fault)
    body = (
        {"topic": "harbour boat"}
        if door == "recall"
        else {"trigger_prompt": "harbour boat", "butler": "chat"}
    )
    try:
        started = time.monotonic()
        answer = await client.post(f"/v1/{door}", json=body)
        took = time.monotonic() - started
    finally:
        gate.set()
    assert answer.status_code == 200, answer.text
    found = answer.json()
    assert found["semantic_skipped"] == ("unavailable" if fault == "down" else "timeout")
    ids = [item["id"] for item in found["results" if door == "recall" else "items"]]
    assert ids == [fact["id"]]
    assert took < 3  # the half-second budget and the SQL, not the endpoint


BAD_VECTORS = {"nan": "NaN", "inf": "Infinity", "zero": "0.0"}


@pytest.mark.parametrize("bad", list(BAD_VECTORS))
async def test_a_bad_vector_defers_the_write_and_the_backlog_embeds_it_later(
    app, client, remote_model, sql, caplog, bad
):
    stub = remote_model(**ENDPOINT)
    await store_episode(client, "warm up")  # the model's width is asked first
    vector = ", ".join([BAD_VECTORS[bad]] * 384)
    stub.standing = Answer(body=f'{{"data": [{{"index": 0, "embedding": [{vector}]}}]}}')
    content = "Ann's secret door code is 4711"
    with caplog.at_level(logging.DEBUG):
        stored = await client.post("/v1/episodes", json={"content": content, "butler": "chat"})
    assert stored.status_code == 201, stored.text
    assert await _unembedded(sql, content)
    assert not any(content in record.getMessage() for record in caplog.records)
    assert not app.state.embedder.failed_recently  # one text's answer, not an outage
    stub.standing = None
    assert (await embed_backlog(app.state.sessionmaker, app.state.embedder))["episodes"] == 1
    assert not await _unembedded(sql, content)


async def test_one_process_at_a_time_runs_the_backlog(app, client, remote_model, sql):
    stub = remote_model(**ENDPOINT)
    stub.standing = DOWN
    await store_episode(client, "Ann moored her boat at the harbour")
    gate = threading.Event()
    stub.standing = Answer(gate=gate)
    asked = len(stub.received)

    first = asyncio.create_task(
        embed_backlog(app.state.sessionmaker, app.state.embedder, holder="one")
    )

    await until(lambda: len(stub.received) > asked)
    second = await embed_backlog(app.state.sessionmaker, app.state.embedder, holder="two")
    assert second == {"episodes": 0}
    assert len(stub.received) == asked + 1  # the second pass made no model call
    stub.standing = None
    gate.set()
    assert (await first)["episodes"] == 1


async def test_an_endpoint_that_refuses_connections_is_skipped_while_its_caller_retries(
    app, client, monkeypatch
):
    """The first search waits its budget; searches after it go keyword-only at once, not
    only when the first caller has spent every retry."""
    monkeypatch.setattr(app.state.settings.retrieval, "query_embedding_seconds", 0.5)
    shipped = app.state.embedder
    with embeddings_stub(dimensions=384) as gone:
        embedder = remote_embedder(gone, max_attempts=4, backoff_seconds=2.0)
        embedder.load()  # asks the model's width while it still answers
    # Stopped: nothing listens on its port, so each attempt is refused at once and the
    # caller waits 2 + 4 + 8 s between attempts.
    app.state.embedder = embedder
    try:
        await store_fact(client, "Ann", "moors", "Ann moors her boat at the harbour")
        first = (await client.post("/v1/search", json={"query": "harbour"})).json()
        assert first["semantic_skipped"] in ("timeout", "unavailable")
        await until(
            lambda: embedder.failed_recently,
            timeout=1.5,
            message="the endpoint marked failed after its first refused attempt",
        )
        started = time.monotonic()
        second = (await client.post("/v1/search", json={"query": "harbour"})).json()
        assert second["semantic_skipped"] == "unavailable"
        assert time.monotonic() - started < 0.4  # not another wait for the budget
        assert [hit["content"] for hit in second["results"]] == [
            "Ann moors her boat at the harbour"
        ]
    finally:
        app.state.embedder = shipped
        embedder.close()
