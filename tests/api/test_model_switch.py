"""Switching a live store to another embedding model: the new vectors are built beside the
old ones while searches and writes go on, then searches move to the new model in one step."""

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from sqlalchemy import text

from app.db import make_sessionmaker, to_libpq_url
from app.errors import StartupRefused
from app.services import embedding_store
from app.worker import model_switch
from tests.support.database import scratch_database
from tests.support.embeddings_stub import EmbeddingsStub, embeddings_stub
from tests.support.factories import store_fact, store_rule
from tests.support.http import post
from tests.support.model_app import client_of, remote_embedder, started

VECTOR_TABLES = ("episodes", "facts", "rules", "passages", "runs", "run_messages",
                 "procedures", "arcs", "agent_events")
LONG = " ".join(f"Ann sailed past lighthouse number {n} on her way north." for n in range(40))


@pytest.fixture
async def scratch_url(database_url: str) -> AsyncIterator[str]:
    """A database of its own, migrated at the app's start."""
    async with scratch_database(to_libpq_url(database_url), "engram_switch") as url:
        yield url


@pytest.fixture
def old_stub() -> Iterator[EmbeddingsStub]:
    with embeddings_stub(dimensions=24) as running:
        yield running


@pytest.fixture
def new_stub() -> Iterator[EmbeddingsStub]:
    with embeddings_stub(dimensions=40) as running:
        yield running


def _models(old_stub: EmbeddingsStub, new_stub: EmbeddingsStub) -> tuple[Any, Any]:
    old = remote_embedder(old_stub)
    new = remote_embedder(new_stub)
    new.model_name = "stub-next"
    return old, new


async def _found(http: httpx.AsyncClient, content: str, memory_id: str) -> bool:
    """Whether a semantic search for the memory's own text finds it first."""
    response = await http.post("/v1/search", json={"query": content, "mode": "semantic",
                                                   "limit": 3})
    assert response.status_code == 200, response.text
    results = response.json()["results"]
    return bool(results) and results[0]["id"] == memory_id


async def _store(http: httpx.AsyncClient, content: str, **fields: Any) -> str:
    response = await http.post("/v1/episodes", json={"content": content, "butler": "chat",
                                                     **fields})
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


async def _sql(application: Any, query: str) -> list[Any]:
    async with application.state.owner_engine.connect() as conn:
        return list((await conn.execute(text(query))).all())


async def _store_every_kind(http: httpx.AsyncClient) -> dict[str, str]:
    """One memory of each kind with vectors; the episodes' text by id."""
    episodes = {await _store(http, content, session_id="s1"): content for content in (
        "Ann moored her boat at the harbour", "Bob baked bread for the fair", LONG)}
    await store_fact(http, subject="Ann", predicate="owns", content="Ann owns a boat")
    await store_rule(http, "Answer in the user's language")
    await post(http, "/v1/procedures", agent_id="a1", name="moor_boat",
               description="Moor a boat", steps=[{"step": 1, "action": "tie_the_line"}])
    await post(http, "/v1/arcs", title="Ann's voyage", arc_type="interaction_arc")
    await post(http, "/v1/ledgers/harbour/events", agent_id="a1", kind="agent.spoke",
               content="Ann left the harbour", turn=1)
    run = await post(http, "/v1/runs", task_id="sail", summary="sailed north")
    response = await http.post(f"/v1/runs/{run['id']}/messages/batch", json={"items": [
        {"role": "planner", "content": "go north"}]})
    assert response.status_code == 201, response.text
    return episodes


async def test_a_switch_keeps_every_memory_findable_and_moves_searches_in_one_step(
        scratch_url, old_stub, new_stub, monkeypatch):
    old, new = _models(old_stub, new_stub)
    old.next = new
    async with started(scratch_url, old, monkeypatch) as application, \
            client_of(application) as http:
        episodes = await _store_every_kind(http)
        sessions = make_sessionmaker(application.state.owner_engine)
        switching = asyncio.create_task(
            model_switch.switch_models(sessions, old, new, progress=False))
        written_meanwhile: dict[str, str] = {}
        probes = 0
        while not switching.done():
            content = f"note {probes} written while the store switches models"
            written_meanwhile[await _store(http, content)] = content
            for memory_id, known in list(episodes.items())[:2]:
                assert await _found(http, known, memory_id), (probes, known)
            probes += 1
        report = switching.result()
        assert probes > 0
        assert report.swap_attempts >= 1
        # Every memory, those written during the switch too, is found with the new model.
        for memory_id, content in {**episodes, **written_meanwhile}.items():
            assert await _found(http, content, memory_id), content
        assert f"query: {LONG[:20]}" not in new_stub.inputs()  # no prefix configured
        assert any(LONG[:60] in text_ for text_ in new_stub.inputs())  # passages re-made
        for table in VECTOR_TABLES:
            [(dims, previous, versions)] = await _sql(application, f"""
                SELECT array_agg(DISTINCT vector_dims(embedding)),
                       array_agg(DISTINCT vector_dims(embedding_next)),
                       array_agg(DISTINCT v.model_name)
                  FROM {table} t JOIN embedding_versions v ON v.id = t.embedding_version_id""")
            assert dims == [40] and versions == ["stub-next"], table
            assert set(previous) <= {24, None}, table
        [(state, serving)] = await _sql(application, """
            SELECT s.state, v.model_name FROM embedding_switches s
              JOIN embedding_versions v ON v.id = s.serving_version_id""")
        assert (state, serving) == ("switched", "stub-next")
        indexes = {row[0] for row in await _sql(
            application, "SELECT indexname FROM pg_indexes WHERE indexname LIKE "
                         "'ix_episodes_embedding_hnsw%'")}
        assert indexes == {"ix_episodes_embedding_hnsw", "ix_episodes_embedding_hnsw_next"}

        # The previous vectors go only when asked.
        assert "stub-embedding" in await model_switch.drop_previous(sessions)
        for table in VECTOR_TABLES:
            [(kept,)] = await _sql(application,
                                   f"SELECT count(embedding_next) FROM {table}")
            assert kept == 0, table
        for memory_id, content in episodes.items():
            assert await _found(http, content, memory_id), content
        with pytest.raises(model_switch.SwitchRefused, match="no previous"):
            await model_switch.drop_previous(sessions)

        # A process that did not load the new model is refused at start.
        alone = remote_embedder(old_stub)
        with pytest.raises(StartupRefused, match="stub-next"):
            await embedding_store.fit_to_model(sessions, alone)


async def test_a_switch_resumes_and_covers_what_a_process_without_the_new_model_wrote(
        scratch_url, old_stub, new_stub, monkeypatch):
    old, new = _models(old_stub, new_stub)
    async with started(scratch_url, old, monkeypatch) as application, \
            client_of(application) as http:
        before = await _store(http, "Ann moored her boat at the harbour")
        sessions = make_sessionmaker(application.state.owner_engine)
        # The switch began (as if the command had stopped after its first step), while this
        # process runs the old model alone: its writes leave the new slot empty.
        await model_switch._begin(sessions, old, new)
        during = await _store(http, "Bob baked bread for the fair")
        [(empty,)] = await _sql(application, f"SELECT count(*) FROM episodes WHERE id = "
                                             f"'{during}' AND embedding_next IS NULL")
        assert empty == 1
        assert await _found(http, "Bob baked bread for the fair", during)
        with pytest.raises(model_switch.SwitchRefused, match="under way"):
            other = remote_embedder(new_stub)
            other.model_name = "stub-other"
            await model_switch._begin(sessions, old, other)
        report = await model_switch.switch_models(sessions, old, new, progress=False)
        assert report.embedded["episodes"] == 2
        # The process without the new model is told to restart rather than search wrongly.
        refused = await http.post("/v1/search", json={"query": "Ann", "mode": "semantic"})
        assert refused.status_code == 503
        assert "stub-next" in refused.json()["detail"]
        old.next = new
        for memory_id, content in ((before, "Ann moored her boat at the harbour"),
                                   (during, "Bob baked bread for the fair")):
            assert await _found(http, content, memory_id), content
        with pytest.raises(model_switch.SwitchRefused, match="drop them"):
            await model_switch._begin(sessions, new, old)
