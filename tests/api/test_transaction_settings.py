"""Settings local to a transaction ride on the statement that begins it (one round trip less);
a search begins its transaction while the model encodes its query, when the model is idle."""

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from sqlalchemy import event, text

from app.embedding.scheduler import ChunkEvent
from app.retrieval.query_vector import query_vector
from app.rls import TENANT_SETTING
from app.scope import Scope, scoped_transaction, set_local
from tests.support.factories import store_episode, store_fact, store_rule
from tests.support.http import post

SHOW = text(f"SELECT current_setting('hnsw.ef_search', true), "
            f"current_setting('{TENANT_SETTING}', true)")


@contextmanager
def statements_sent(app: Any) -> Iterator[list[str]]:
    """The SQL statements the app's engine sends while the block runs."""
    sent: list[str] = []
    engine = app.state.sessionmaker.kw["bind"].sync_engine

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        sent.append(statement)

    event.listen(engine, "before_cursor_execute", record)
    try:
        yield sent
    finally:
        event.remove(engine, "before_cursor_execute", record)


async def test_settings_before_the_first_statement_go_with_the_scope(app):
    with statements_sent(app) as sent:
        async with scoped_transaction(app.state.sessionmaker, Scope(tenant_id="t1")) as session:
            await set_local(session, {"hnsw.ef_search": "77"})
            row = (await session.execute(SHOW)).one()
    assert tuple(row) == ("77", "t1")
    assert len([s for s in sent if "set_config" in s]) == 1
    assert len(sent) == 2


async def test_settings_after_the_first_statement_apply_at_once(app):
    async with scoped_transaction(app.state.sessionmaker, Scope(tenant_id="t1")) as session:
        await session.execute(text("SELECT 1"))
        await set_local(session, {"hnsw.ef_search": "55"})
        assert (await session.execute(SHOW)).one()[0] == "55"


async def test_settings_end_with_their_transaction(app):
    async with app.state.sessionmaker() as session:
        async with session.begin():
            await set_local(session, {"hnsw.ef_search": "66"})
        async with session.begin():
            await session.execute(text("SELECT 1"))
            default = (await session.execute(SHOW)).one()[0]
        async with session.begin():
            await set_local(session, {"hnsw.ef_search": "44"})
            assert (await session.execute(SHOW)).one()[0] == "44"
    assert default != "66"


async def test_a_hybrid_search_sets_scope_and_scan_settings_in_one_statement(app, client):
    await post(client, "/v1/episodes", content="Caroline went to a support group",
               butler="b1")
    with statements_sent(app) as sent:
        response = await client.post("/v1/search", json={"query": "support group",
                                                         "mode": "hybrid"})
    assert response.status_code == 200, response.text
    assert response.json()["results"]
    settings = [s for s in sent if "set_config" in s]
    assert len(settings) == 1
    assert sent[0] == settings[0]


@pytest.mark.parametrize("mode", ["hybrid", "semantic", "keyword"])
async def test_a_search_is_one_statement_after_the_settings(app, client, mode):
    """Candidate lists, the time window's episodes and every hit's row come in one round
    trip, whatever the types asked for."""
    await store_episode(client, "Caroline: we went on a long hike up Mount Diablo",
                        occurred_at="2023-05-08T10:00:00Z")
    await store_episode(client, "Caroline: we went on a long hike up Half Dome",
                        occurred_at="2023-06-20T10:00:00Z")
    await store_fact(client, "Caroline", "likes", "Caroline likes a long hike")
    await store_rule(client, "Suggest a hike when Caroline asks about weekends")
    with statements_sent(app) as sent:
        response = await client.post("/v1/search", json={
            "query": "which long hike did Caroline do in May 2023", "mode": mode})
    assert response.status_code == 200, response.text
    results = response.json()["results"]
    assert {hit["memory_type"] for hit in results} == {"episode", "fact", "rule"}
    top_episode = next(hit for hit in results if hit["memory_type"] == "episode")
    assert "Mount Diablo" in top_episode["content"] and top_episode["time_rank"] == 1
    assert all(hit["content"] for hit in results)
    assert len(sent) == 2 and "set_config" in sent[0]


LONG_QUERY = "what did Caroline say about the support group and the adoption agencies " * 8


async def test_a_search_begins_its_transaction_while_the_idle_model_encodes(app):
    """The connection, its liveness check and the settings cost no time of their own: they
    are sent while the query's model call runs."""
    embedder = app.state.embedder
    model_busy_at_begin: list[bool] = []
    engine = app.state.sessionmaker.kw["bind"].sync_engine

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if "set_config" in statement:
            model_busy_at_begin.append(not embedder.idle)

    event.listen(engine, "before_cursor_execute", record)
    try:
        async with scoped_transaction(app.state.sessionmaker, Scope(tenant_id="t1")) as session:
            assert embedder.idle
            vector = await query_vector(session, embedder, LONG_QUERY, tenant_id="t1",
                                        retrieval=app.state.settings.retrieval, depth=70)
            row = (await session.execute(SHOW)).one()
    finally:
        event.remove(engine, "before_cursor_execute", record)
    assert model_busy_at_begin == [True]
    assert tuple(row) == ("70", "t1")
    assert vector == pytest.approx(embedder.embed(LONG_QUERY), abs=1e-5)


async def test_a_search_waiting_for_the_model_holds_no_connection(app):
    """While other work keeps the model busy, a search's transaction begins only once its
    query is encoded, so searches queued for the model do not hold the pool's connections."""
    embedder = app.state.embedder
    batch = asyncio.create_task(embedder.aembed_batch([f"{i} {LONG_QUERY}" for i in range(96)],
                                                      tenant_id="busy"))
    try:
        while embedder.idle:
            await asyncio.sleep(0.001)
        pool = app.state.sessionmaker.kw["bind"].pool
        held = pool.checkedout()
        async with scoped_transaction(app.state.sessionmaker, Scope(tenant_id="t1")) as session:
            search = asyncio.create_task(query_vector(
                session, embedder, "support group", tenant_id="t1",
                retrieval=app.state.settings.retrieval, depth=50))
            while ChunkEvent("queued", "t1", 1) not in embedder.chunk_record:
                await asyncio.sleep(0.001)
            assert not search.done()
            assert pool.checkedout() == held
            await search
            assert pool.checkedout() == held
            assert tuple((await session.execute(SHOW)).one()) == ("50", "t1")
    finally:
        await batch
