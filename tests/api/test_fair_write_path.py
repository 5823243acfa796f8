"""The write path under one heavy tenant: no connection held while the model works, and the
model queue serves other tenants in turn."""

import asyncio
import threading
from typing import Any

import httpx
import pytest

from app.core.scope import SYSTEM, Scope, scoped_transaction
from app.embedding import Embedder
from app.embedding.scheduler import ChunkEvent
from app.repositories import embedding_versions
from app.repositories import episodes as episode_rows
from app.services import api_keys, embeddings
from tests.support.keyword_index import recomputed_index, stored_index

LONG_TURN = "Caroline told Melanie about the support group and the adoption agencies. " * 40


async def client_for(app: Any, tenant_id: str) -> httpx.AsyncClient:
    async with scoped_transaction(app.state.sessionmaker, SYSTEM) as session:
        minted = await api_keys.create_key(session, tenant_id=tenant_id)
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app),
        base_url="http://t",
        headers={"X-API-Key": minted.secret},
        timeout=600,
    )


async def test_a_search_completes_while_a_long_embedding_is_in_flight_on_one_connection(
    one_connection_app,
):
    app = one_connection_app
    embedder = app.state.embedder
    heavy, light = await client_for(app, "heavy"), await client_for(app, "light")
    async with heavy, light:
        items = [{"content": f"{i} {LONG_TURN}", "butler": "bulk"} for i in range(50)]
        batch = asyncio.create_task(heavy.post("/v1/episodes/batch", json={"items": items}))
        while not any(
            e.kind == "started" and e.tenant_id == "heavy" for e in embedder.chunk_record
        ):
            await asyncio.sleep(0.005)
        found = await light.post("/v1/search", json={"query": "support group"})
        assert found.status_code == 200
        assert not batch.done(), "the heavy batch was still embedding when the search returned"
        record = embedder.chunk_record
        queued = record.index(ChunkEvent("queued", "light", 1))
        assert next(e for e in record[queued:] if e.kind == "started") == ChunkEvent(
            "started", "light", 1
        )
        assert (await batch).status_code == 201


async def test_a_bulk_fact_store_holds_no_connection_while_the_model_works(one_connection_app):
    app = one_connection_app
    embedder = app.state.embedder
    heavy, light = await client_for(app, "bulk-facts"), await client_for(app, "light")
    async with heavy, light:
        items = [
            {"subject": f"s{i}", "predicate": "p", "content": f"{i} {LONG_TURN}"} for i in range(50)
        ]
        task = asyncio.create_task(heavy.post("/v1/facts/bulk", json={"items": items}))
        deadline = asyncio.get_running_loop().time() + 120
        while not any(
            e.kind == "started" and e.tenant_id == "bulk-facts" for e in embedder.chunk_record
        ):
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
    one_connection_app, kind
):
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
            arc = await heavy.post("/v1/arcs", json={"title": "A", "arc_type": "incident"})
            rewrite = heavy.post(
                f"/v1/arcs/{arc.json()['id']}/close",
                json={"outcome": long_text[:10_000], "lessons": [long_text[:10_000]] * 4},
            )

        def started() -> int:
            return sum(
                1 for e in embedder.chunk_record if e.tenant_id == writer and e.kind == "started"
            )

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
    app, client, sql, monkeypatch
):
    # A model version the database has never seen: the first write inserts its row.
    monkeypatch.setattr(Embedder, "model_version", property(lambda self: "rolled-back-test"))
    monkeypatch.setattr(embedding_versions, "_version_ids", {})
    try:
        with pytest.raises(_Abandoned):
            async with scoped_transaction(app.state.sessionmaker, Scope("default")) as session:
                await embeddings.embed_texts(
                    session, app.state.embedder, ["first write"], tenant_id="default"
                )
                raise _Abandoned
        response = await client.post(
            "/v1/episodes", json={"content": "the next write", "butler": "chat"}
        )
        assert response.status_code == 201
        [row] = await sql(
            "SELECT v.model_version FROM episodes e "
            "JOIN embedding_versions v ON v.id = e.embedding_version_id"
        )
        assert row["model_version"] == "rolled-back-test"
    finally:
        await sql("TRUNCATE episodes, passages CASCADE")
        await sql("DELETE FROM embedding_versions WHERE model_version = 'rolled-back-test'")


async def test_a_tenants_search_and_single_write_go_ahead_of_its_own_batch(
    one_connection_app, monkeypatch
):
    app = one_connection_app
    embedder = app.state.embedder
    backend = embedder.load()
    encode = backend.encode
    release = threading.Event()

    def held_batch(texts: list[str]) -> Any:
        """The batch's calls wait (bounded) until the search and the write are in."""
        if any(LONG_TURN in text for text in texts):
            release.wait(timeout=60)
        return encode(texts)

    monkeypatch.setattr(backend, "encode", held_batch)
    tenant = "importer"  # a tenant only this test uses
    importer, chat = await client_for(app, tenant), await client_for(app, tenant)

    def ours(kind: str, *, bulk: bool) -> list[int]:
        return [
            index
            for index, e in enumerate(embedder.chunk_record)
            if (e.kind, e.tenant_id, e.bulk) == (kind, tenant, bulk)
        ]

    async with importer, chat:
        items = [
            {"content": f"{i} {LONG_TURN}", "butler": "chat", "session_id": "history"}
            for i in range(20)
        ]
        batch = asyncio.create_task(importer.post("/v1/episodes/batch", json={"items": items}))
        try:
            while not ours("started", bulk=True):
                assert not batch.done(), (await batch).text
                await asyncio.sleep(0.005)
            found = await chat.post("/v1/search", json={"query": "support group"})
            assert found.status_code == 200
            stored = await chat.post(
                "/v1/facts",
                json={
                    "subject": "Caroline",
                    "predicate": "plan",
                    "content": "Caroline will adopt.",
                },
            )
            assert stored.status_code == 201
        finally:
            release.set()
        created = await batch
        assert created.status_code == 201 and len(created.json()["items"]) == 20
    record = embedder.chunk_record
    queued = ours("queued", bulk=False)
    assert [record[i].size for i in queued] == [1, 1]  # the query, then the fact
    for index in queued:  # the tenant's next chunk to start after each was its own
        assert next(
            e for e in record[index:] if e.kind == "started" and e.tenant_id == tenant
        ) == ChunkEvent("started", tenant, 1)
    # The batch was queued first; most of its chunks ran after both.
    assert ours("queued", bulk=True)[-1] < queued[0]
    started = ours("started", bulk=True)
    assert len(started) == len(ours("queued", bulk=True)) > 10
    assert sum(index > ours("started", bulk=False)[-1] for index in started) >= len(started) - 2


async def test_a_single_write_does_not_wait_for_a_batch_transaction_that_is_writing(
    client, sql, monkeypatch
):
    count = episode_rows.count_keyword_documents
    counting, go_on = asyncio.Event(), asyncio.Event()

    async def held(*args: Any, **kwargs: Any) -> None:
        """The batch's last statement waits until the single write is done."""
        counting.set()
        await asyncio.wait_for(go_on.wait(), timeout=60)
        await count(*args, **kwargs)

    monkeypatch.setattr(episode_rows, "count_keyword_documents", held)
    items = [
        {"content": f"{i} the orchard was sold in may", "butler": "chat", "session_id": "history"}
        for i in range(50)
    ]
    batch = asyncio.create_task(client.post("/v1/episodes/batch", json={"items": items}))
    try:
        # The batch has inserted its episodes, passages and events, in its open transaction.
        await asyncio.wait_for(counting.wait(), timeout=120)
        stored = await asyncio.wait_for(
            client.post(
                "/v1/facts",
                json={"subject": "Ann", "predicate": "owns", "content": "Ann owns the orchard"},
            ),
            timeout=30,
        )
        assert stored.status_code == 201, stored.text
        assert not batch.done()
    finally:
        go_on.set()
    assert (await batch).status_code == 201
    assert await stored_index(sql) == await recomputed_index(sql)
    [orchard] = await sql("SELECT doc_freq FROM keyword_terms WHERE term = 'orchard'")
    assert orchard["doc_freq"] == 51
