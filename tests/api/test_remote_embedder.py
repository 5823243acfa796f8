"""The service with a remote embedder: memories are embedded over HTTP and found; an
endpoint that keeps failing gives a 503 with Retry-After, never a 500, and stores nothing."""

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.embeddings_stub import Answer, EmbeddingsStub, embeddings_stub
from tests.support.factories import store_episode
from tests.support.model_app import remote_embedder


@pytest.fixture
def stub(app: Any) -> Iterator[EmbeddingsStub]:
    """The app's model replaced by an endpoint of the schema's width."""
    shipped = app.state.embedder
    with embeddings_stub(dimensions=384) as running:
        embedder = remote_embedder(running, max_attempts=2, backoff_seconds=0.01,
                                   query_prefix="query: ", document_prefix="passage: ")
        app.state.embedder = embedder
        try:
            yield running
        finally:
            app.state.embedder = shipped
            embedder.close()


async def test_memories_are_embedded_by_the_endpoint_and_found(client, stub, sql):
    episode = await store_episode(client, "Ann moored her boat at the harbour")
    assert "passage: Ann moored her boat at the harbour" in stub.inputs()
    response = await client.post("/v1/search", json={"query": "Ann moored her boat",
                                                     "mode": "semantic"})
    assert response.status_code == 200, response.text
    assert "query: Ann moored her boat" in stub.inputs()
    [row] = await sql("SELECT v.model_name FROM episodes e JOIN embedding_versions v "
                      "ON v.id = e.embedding_version_id WHERE e.content LIKE 'Ann moored%'")
    assert row["model_name"] == "stub-embedding"
    assert response.json()["results"][0]["id"] == episode["id"]


async def test_an_unavailable_endpoint_is_a_503_with_retry_after(client, stub, sql):
    stub.answer(*[Answer(503, {"Retry-After": "0"}, '{"error": "loading"}'),
                  Answer(429, {"Retry-After": "7"}, '{"error": "slow down"}')] * 2)
    stored = await client.post("/v1/episodes", json={"content": "lost?", "butler": "chat"})
    assert stored.status_code == 503
    assert stored.headers["content-type"] == "application/problem+json"
    assert stored.headers["Retry-After"] == "7"
    assert stub.base_url not in stored.text  # the endpoint is the operator's business
    assert await sql("SELECT id FROM episodes WHERE content = 'lost?'") == []
    found = await client.post("/v1/search", json={"query": "lost", "mode": "semantic"})
    assert found.status_code == 503
    assert found.headers["Retry-After"] == "7"
