"""Settings local to a transaction ride on the statement that begins it (one round trip less)."""

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from sqlalchemy import event, text

from app.core.rls import TENANT_SETTING
from app.core.scope import Scope, scoped_transaction, set_local
from tests.support.factories import store_episode, store_fact, store_rule
from tests.support.http import post

SHOW = text(
    f"SELECT current_setting('hnsw.ef_search', true), current_setting('{TENANT_SETTING}', true)"
)


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
    await post(client, "/v1/episodes", content="Caroline went to a support group", butler="b1")
    with statements_sent(app) as sent:
        response = await client.post(
            "/v1/search", json={"query": "support group", "mode": "hybrid"}
        )
    assert response.status_code == 200, response.text
    assert response.json()["results"]
    settings = [s for s in sent if "set_config" in s]
    assert len(settings) == 1
    assert sent[0] == settings[0]


@pytest.mark.parametrize("mode", ["hybrid", "semantic", "keyword"])
async def test_a_search_is_one_statement_after_the_settings(app, client, mode):
    """Candidate lists, the time window's episodes and every hit's row come in one round
    trip, whatever the types asked for."""
    await store_episode(
        client,
        "Caroline: we went on a long hike up Mount Diablo",
        occurred_at="2023-05-08T10:00:00Z",
    )
    await store_episode(
        client, "Caroline: we went on a long hike up Half Dome", occurred_at="2023-06-20T10:00:00Z"
    )
    await store_fact(client, "Caroline", "likes", "Caroline likes a long hike")
    await store_rule(client, "Suggest a hike when Caroline asks about weekends")
    with statements_sent(app) as sent:
        response = await client.post(
            "/v1/search",
            json={"query": "which long hike did Caroline do in May 2023", "mode": mode},
        )
    assert response.status_code == 200, response.text
    results = response.json()["results"]
    assert {hit["memory_type"] for hit in results} == {"episode", "fact", "rule"}
    top_episode = next(hit for hit in results if hit["memory_type"] == "episode")
    assert "Mount Diablo" in top_episode["content"] and top_episode["time_rank"] == 1
    assert all(hit["content"] for hit in results)
    assert len(sent) == 2 and "set_config" in sent[0]


@contextmanager
def round_trips(app: Any) -> Iterator[list[str]]:
    """What the app's requests send PostgreSQL while the block runs, one entry a round trip:
    each statement, and BEGIN and COMMIT around them (the reference queue's writes, in a
    task of their own, left out)."""
    sent: list[str] = []
    engine = app.state.sessionmaker.kw["bind"].sync_engine

    def note(entry: str) -> None:
        task = asyncio.current_task()
        if task is None or task.get_name() != "engram-reference-flush":
            sent.append(entry)

    listeners = {
        "before_cursor_execute": lambda conn, cursor, statement, *args: note(statement),
        "begin": lambda conn: note("BEGIN"),
        "commit": lambda conn: note("COMMIT"),
        "rollback": lambda conn: note("ROLLBACK"),
    }
    for name, listener in listeners.items():
        event.listen(engine, name, listener)
    try:
        yield sent
    finally:
        for name, listener in listeners.items():
            event.remove(engine, name, listener)


@pytest.mark.parametrize(
    ("path", "body", "found"),
    [
        ("/v1/search", {"query": "long hike with Caroline"}, "results"),
        ("/v1/recall", {"topic": "long hike with Caroline"}, "results"),
        ("/v1/context", {"trigger_prompt": "long hike with Caroline", "butler": "b1"}, "items"),
    ],
)
async def test_a_read_is_at_most_four_round_trips(app, client, path, body, found):
    """BEGIN, the settings with which model serves, the search statement and COMMIT: recall
    and context count their references without a statement of their own."""
    await store_fact(client, "Caroline", "likes", "Caroline likes a long hike")
    await store_rule(client, "Suggest a long hike when Caroline asks about weekends")
    with round_trips(app) as sent:
        response = await client.post(path, json=body)
    assert response.status_code == 200, response.text
    assert response.json()[found]
    assert len(sent) <= 4, sent
    assert not [s for s in sent if s.lstrip().upper().startswith(("UPDATE", "INSERT"))]
