"""The write path under one heavy tenant: no connection held while the model works, and the
model queue serves other tenants in turn."""

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from app.config import Settings
from app.embedding import Embedder
from app.embedding.scheduler import ChunkEvent
from app.main import create_app
from app.scope import SYSTEM, Scope, scoped_transaction
from app.services import api_keys, embeddings

LONG_TURN = "Caroline told Melanie about the support group and the adoption agencies. " * 40


@pytest.fixture
async def one_connection_app(settings: Settings) -> AsyncIterator[Any]:
    """The app with a database pool of exactly one connection."""
    app = create_app(settings.model_copy(update={"db_pool_size": 1, "db_max_overflow": 0}))
    async with app.router.lifespan_context(app):
        yield app


async def client_for(app: Any, tenant_id: str) -> httpx.AsyncClient:
    async with scoped_transaction(app.state.sessionmaker, SYSTEM) as session:
        minted = await api_keys.create_key(session, tenant_id=tenant_id)
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t",
                             headers={"X-API-Key": minted.secret}, timeout=600)


async def test_a_search_completes_while_a_long_embedding_is_in_flight_on_one_connection(
        one_connection_app):
    app = one_connection_app
    embedder = app.state.embedder
    heavy, light = await client_for(app, "heavy"), await client_for(app, "light")
    async with heavy, light:
        items = [{"content": f"{i} {LONG_TURN}", "butler": "bulk"} for i in range(200)]
        batch = asyncio.create_task(heavy.post("/v1/episodes/batch", json={"items": items}))
        while not any(e.kind == "started" and e.tenant_id == "heavy"
                      for e in embedder.chunk_record):
            await asyncio.sleep(0.005)
        found = await light.post("/v1/search", json={"query": "support group"})
        assert found.status_code == 200
        assert not batch.done(), "the heavy batch was still embedding when the search returned"
        record = embedder.chunk_record
        queued = record.index(ChunkEvent("queued", "light", 1))
        assert next(e for e in record[queued:] if e.kind == "started") == ChunkEvent(
            "started", "light", 1)
        assert (await batch).status_code == 201


async def test_a_bulk_fact_store_holds_no_connection_while_the_model_works(
        one_connection_app):
    app = one_connection_app
    embedder = app.state.embedder
    heavy, light = await client_for(app, "bulk-facts"), await client_for(app, "light")
    async with heavy, light:
        items = [{"subject": f"s{i}", "predicate": "p", "content": f"{i} {LONG_TURN}"}
                 for i in range(50)]
        task = asyncio.create_task(heavy.post("/v1/facts/bulk", json={"items": items}))
        deadline = asyncio.get_running_loop().time() + 120
        while not any(e.kind == "started" and e.tenant_id == "bulk-facts"
                      for e in embedder.chunk_record):
            assert not task.done(), (await task).text
            assert asyncio.get_running_loop().time() < deadline, "the model never started"
            await asyncio.sleep(0.005)
        found = await light.post("/v1/search", json={"query": "support group"})
        assert found.status_code == 200
        assert not task.done(), "the bulk store was still embedding when the search returned"
        stored = await task
        assert stored.status_code == 200, stored.text
        assert [item["status"] for item in stored.json()["items"]] == [201] * 50


@pytest.mark.parametrize("kind", ["run summary", "arc close"])
async def test_a_rewrite_that_embeds_holds_no_connection_while_the_model_works(
        one_connection_app, kind):
    app = one_connection_app
    embedder = app.state.embedder
    writer = f"rewriter-{kind.replace(' ', '-')}"  # a tenant only this test uses
    heavy, light = await client_for(app, writer), await client_for(app, "light")
    long_text = LONG_TURN * 14  # about 42,000 characters: dozens of passages to embed
    async with heavy, light:
        if kind == "run summary":
            run = (await heavy.post("/v1/runs", json={"task_id": "t"})).json()
            rewrite = heavy.patch(f"/v1/runs/{run['id']}", json={"summary": long_text})
        else:
            arc = (await heavy.post("/v1/arcs", json={"title": "A", "arc_type": "incident"}))
            rewrite = heavy.post(f"/v1/arcs/{arc.json()['id']}/close",
                                 json={"outcome": long_text[:10_000],
                                       "lessons": [long_text[:10_000]] * 4})
        def started() -> int:
            return sum(1 for e in embedder.chunk_record
                       if e.tenant_id == writer and e.kind == "started")

        before = started()
        task = asyncio.create_task(rewrite)
        while started() <= before:
            assert not task.done(), (await task).text
            await asyncio.sleep(0.005)
        found = await light.post("/v1/search", json={"query": "support group"})
        assert found.status_code == 200
        assert not task.done(), "the rewrite was still embedding when the search returned"
        assert (await task).status_code == 200


class _Abandoned(Exception):
    """Raised to roll a write back after its model version row was inserted."""


async def test_a_rolled_back_first_write_leaves_no_model_version_id_behind(
        app, client, sql, monkeypatch):
    # A model version the database has never seen: the first write inserts its row.
    monkeypatch.setattr(Embedder, "model_version", property(lambda self: "rolled-back-test"))
    monkeypatch.setattr(embeddings, "_version_ids", {})
    try:
        with pytest.raises(_Abandoned):
            async with scoped_transaction(app.state.sessionmaker, Scope("default")) as session:
                await embeddings.embed_texts(session, app.state.embedder, ["first write"],
                                             tenant_id="default")
                raise _Abandoned
        response = await client.post("/v1/episodes", json={"content": "the next write",
                                                            "butler": "chat"})
        assert response.status_code == 201
        [row] = await sql("SELECT v.model_version FROM episodes e "
                          "JOIN embedding_versions v ON v.id = e.embedding_version_id")
        assert row["model_version"] == "rolled-back-test"
    finally:
        await sql("TRUNCATE episodes, passages CASCADE")
        await sql("DELETE FROM embedding_versions WHERE model_version = 'rolled-back-test'")
