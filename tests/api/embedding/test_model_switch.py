"""Switching a live store to another embedding model: the new vectors are built beside the
old ones while searches and writes go on, then searches move to the new model in one step."""

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from sqlalchemy import text

from app.core.errors import StartupRefused
from app.embedding import Embedder
from app.postgres.db import make_sessionmaker
from app.services import embedding_store
from app.worker import model_switch
from tests.support.embeddings_stub import Answer, EmbeddingsStub, embeddings_stub
from tests.support.factories import store_fact, store_rule
from tests.support.http import post
from tests.support.model_app import client_of, remote_embedder, started
from tests.support.waiting import until

VECTOR_TABLES = (
    "episodes",
    "facts",
    "rules",
    "passages",
    "runs",
    "run_messages",
    "procedures",
    "arcs",
    "agent_events",
)
LONG = " ".join(f"Ann sailed past lighthouse number {n} on her way north." for n in range(40))


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
    response = await http.post(
        "/v1/search", json={"query": content, "mode": "semantic", "limit": 3}
    )
    assert response.status_code == 200, response.text
    results = response.json()["results"]
    return bool(results) and results[0]["id"] == memory_id


async def _store(http: httpx.AsyncClient, content: str, **fields: Any) -> str:
    response = await http.post(
        "/v1/episodes", json={"content": content, "butler": "chat", **fields}
    )
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


async def _sql(application: Any, query: str) -> list[Any]:
    async with application.state.owner_engine.connect() as conn:
        return list((await conn.execute(text(query))).all())


async def _store_every_kind(http: httpx.AsyncClient) -> dict[str, str]:
    """One memory of each kind with vectors; the episodes' text by id."""
    episodes = {
        await _store(http, content, session_id="s1"): content
        for content in ("Ann moored her boat at the harbour", "Bob baked bread for the fair", LONG)
    }
    await store_fact(http, subject="Ann", predicate="owns", content="Ann owns a boat")
    await store_rule(http, "Answer in the user's language")
    await post(
        http,
        "/v1/procedures",
        agent_id="a1",
        name="moor_boat",
        description="Moor a boat",
        steps=[{"step": 1, "action": "tie_the_line"}],
    )
    await post(http, "/v1/arcs", title="Ann's voyage", arc_type="interaction_arc")
    await post(
        http,
        "/v1/ledgers/harbour/events",
        agent_id="a1",
        kind="agent.spoke",
        content="Ann left the harbour",
        turn=1,
    )
    run = await post(http, "/v1/runs", task_id="sail", summary="sailed north")
    response = await http.post(
        f"/v1/runs/{run['id']}/messages/batch",
        json={"items": [{"role": "planner", "content": "go north"}]},
    )
    assert response.status_code == 201, response.text
    return episodes


async def test_a_switch_keeps_every_memory_findable_and_moves_searches_in_one_step(
    scratch_url, old_stub, new_stub, monkeypatch
):
    old, new = _models(old_stub, new_stub)
    old.next = new
    async with (
        started(scratch_url, old, monkeypatch) as application,
        client_of(application) as http,
    ):
        episodes = await _store_every_kind(http)
        sessions = make_sessionmaker(application.state.owner_engine)
        switching = asyncio.create_task(
            model_switch.switch_models(sessions, old, new, progress=False)
        )
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
            [(dims, previous, versions)] = await _sql(
                application,
                f"""
                SELECT array_agg(DISTINCT vector_dims(embedding)),
                       array_agg(DISTINCT vector_dims(embedding_next)),
                       array_agg(DISTINCT v.model_name)
                  FROM {table} t JOIN embedding_versions v ON v.id = t.embedding_version_id""",
            )
            assert dims == [40] and versions == ["stub-next"], table
            assert set(previous) <= {24, None}, table
        [(state, serving)] = await _sql(
            application,
            """
            SELECT s.state, v.model_name FROM embedding_switches s
              JOIN embedding_versions v ON v.id = s.serving_version_id""",
        )
        assert (state, serving) == ("switched", "stub-next")
        indexes = {
            row[0]
            for row in await _sql(
                application,
                "SELECT indexname FROM pg_indexes WHERE indexname LIKE "
                "'ix_episodes_embedding_hnsw%'",
            )
        }
        assert indexes == {"ix_episodes_embedding_hnsw", "ix_episodes_embedding_hnsw_next"}

        # The previous vectors go only when asked.
        assert "stub-embedding" in await model_switch.drop_previous(sessions)
        for table in VECTOR_TABLES:
            [(kept,)] = await _sql(application, f"SELECT count(embedding_next) FROM {table}")
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
    scratch_url, old_stub, new_stub, monkeypatch
):
    old, new = _models(old_stub, new_stub)
    async with (
        started(scratch_url, old, monkeypatch) as application,
        client_of(application) as http,
    ):
        before = await _store(http, "Ann moored her boat at the harbour")
        sessions = make_sessionmaker(application.state.owner_engine)
        # The switch began (as if the command had stopped after its first step), while this
        # process runs the old model alone: its writes leave the new slot empty.
        await model_switch._begin(sessions, old, new)
        during = await _store(http, "Bob baked bread for the fair")
        [(empty,)] = await _sql(
            application,
            f"SELECT count(*) FROM episodes WHERE id = '{during}' AND embedding_next IS NULL",
        )
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
        for memory_id, content in (
            (before, "Ann moored her boat at the harbour"),
            (during, "Bob baked bread for the fair"),
        ):
            assert await _found(http, content, memory_id), content
        with pytest.raises(model_switch.SwitchRefused, match="drop them"):
            await model_switch._begin(sessions, new, old)


async def test_writes_during_a_switch_to_a_remote_model_are_kept_while_it_is_down(
    scratch_url, new_stub, monkeypatch
):
    old = Embedder()  # the packaged local model
    new = remote_embedder(new_stub)
    new.model_name = "stub-next"
    old.next = new
    async with (
        started(scratch_url, old, monkeypatch) as application,
        client_of(application) as http,
    ):
        before = await _store(http, "Ann moored her boat at the harbour")
        sessions = make_sessionmaker(application.state.owner_engine)
        await model_switch._begin(sessions, old, new)
        new_stub.standing = Answer(503, body='{"error": {"message": "overloaded"}}')
        content = "Bob baked bread for the fair while the new model was down"
        response = await http.post("/v1/episodes", json={"content": content, "butler": "chat"})
        assert response.status_code == 201, response.text
        during = response.json()["id"]
        assert await _found(http, content, during)  # the serving model's vector was stored
        new_stub.standing = None
        await model_switch.switch_models(sessions, old, new, progress=False)
        for memory_id in (before, during):
            [(dims, model)] = await _sql(
                application,
                f"""
                SELECT vector_dims(e.embedding), v.model_name FROM episodes e
                  JOIN embedding_versions v ON v.id = e.embedding_version_id
                 WHERE e.id = '{memory_id}'""",
            )
            assert (dims, model) == (40, "stub-next"), memory_id
        assert await _found(http, content, during)


async def test_a_second_switch_command_is_refused_while_one_runs(
    scratch_url, old_stub, new_stub, monkeypatch
):
    old, new = _models(old_stub, new_stub)
    async with (
        started(scratch_url, old, monkeypatch) as application,
        client_of(application) as http,
    ):
        await _store(http, "Ann moored her boat at the harbour")
        sessions = make_sessionmaker(application.state.owner_engine)
        new.load()  # the model asks the endpoint its dimensions once
        gate = threading.Event()
        new_stub.answer(Answer(gate=gate))
        seen = len(new_stub.received)
        first = asyncio.create_task(model_switch.switch_models(sessions, old, new, progress=False))
        try:
            await until(
                lambda: len(new_stub.received) == seen + 1, message="the first switch embeds"
            )
            with pytest.raises(model_switch.SwitchRefused, match="another `engram reembed"):
                await asyncio.wait_for(
                    model_switch.switch_models(sessions, old, new, progress=False), 10
                )
            with pytest.raises(model_switch.SwitchRefused, match="another `engram reembed"):
                await asyncio.wait_for(model_switch.drop_previous(sessions), 10)
            assert not first.done()
        finally:
            gate.set()
        await first
        # Once the first has ended, the next command runs: drop, then switch back.
        assert "stub-embedding" in await model_switch.drop_previous(sessions)
        report = await model_switch.switch_models(sessions, new, old, progress=False)
        assert report.swap_attempts >= 1


async def _at_the_final_step(application: Any, http: httpx.AsyncClient, old: Any, new: Any) -> int:
    """A switch run up to its swap, by a process without the new model; the target's id."""
    await _store(http, "Ann moored her boat at the harbour")
    sessions = make_sessionmaker(application.state.owner_engine)
    next_id = await model_switch._begin(sessions, old, new)
    await model_switch._sweep(sessions, new, next_id, progress=False)
    await model_switch._build_indexes(sessions, new)
    # A fact written now (after the episodes' table) makes the swap's catch-up embed.
    await store_fact(http, subject="Ann", predicate="owns", content="Ann owns a boat")
    return next_id


async def test_the_swap_embeds_the_last_rows_without_holding_searches_and_writes(
    scratch_url, old_stub, new_stub, monkeypatch
):
    old, new = _models(old_stub, new_stub)
    async with (
        started(scratch_url, old, monkeypatch) as application,
        client_of(application) as http,
    ):
        next_id = await _at_the_final_step(application, http, old, new)
        sessions = make_sessionmaker(application.state.owner_engine)
        catching_up, last_rows = threading.Event(), threading.Event()
        new_stub.answer(Answer(gate=catching_up), Answer(gate=last_rows))
        seen = len(new_stub.received)
        swapping = asyncio.create_task(
            model_switch._swap(sessions, new, next_id, model_switch.SwitchReport())
        )
        try:
            await until(lambda: len(new_stub.received) == seen + 1, message="catching up")
            # Written after the catch-up passed the episodes: left for the swap's last step.
            late = await _store(http, "Bob baked bread for the fair")
            catching_up.set()
            await until(lambda: len(new_stub.received) == seen + 2, message="the last rows")
            # The new model holds the last rows: searches and writes still answer meanwhile.
            assert await asyncio.wait_for(_found(http, "Bob baked bread for the fair", late), 10)
            meanwhile = await asyncio.wait_for(_store(http, "Cid mended the nets"), 10)
            assert not last_rows.is_set() and not swapping.done()
        finally:
            catching_up.set()
            last_rows.set()
        await swapping
        for memory_id in (late, meanwhile):
            [(dims,)] = await _sql(
                application, f"SELECT vector_dims(embedding) FROM episodes WHERE id = '{memory_id}'"
            )
            assert dims == 40, memory_id


async def test_a_model_failing_at_the_swap_leaves_a_switch_that_a_second_run_finishes(
    scratch_url, old_stub, new_stub, monkeypatch
):
    old, new = _models(old_stub, new_stub)
    async with (
        started(scratch_url, old, monkeypatch) as application,
        client_of(application) as http,
    ):
        next_id = await _at_the_final_step(application, http, old, new)
        sessions = make_sessionmaker(application.state.owner_engine)
        new_stub.answer(Answer(500, body='{"error": {"message": "model crashed"}}'))
        with pytest.raises(
            model_switch.SwitchRefused,
            match=r"'stub-next' failed: .*500.* run `engram reembed "
            r"--model stub-next` again",
        ):
            await model_switch._swap(sessions, new, next_id, model_switch.SwitchReport())
        # Nothing half done: the store still serves the previous model, mid-switch.
        [(state, serving)] = await _sql(
            application,
            """
            SELECT s.state, v.model_name FROM embedding_switches s
              JOIN embedding_versions v ON v.id = s.serving_version_id""",
        )
        assert (state, serving) == ("building", "stub-embedding")
        written = await _store(http, "Bob baked bread for the fair")
        assert await _found(http, "Bob baked bread for the fair", written)
        report = await model_switch.switch_models(sessions, old, new, progress=False)
        assert report.swap_attempts >= 1
        [(state, dims)] = await _sql(
            application,
            """
            SELECT s.state, array_agg(DISTINCT vector_dims(f.embedding))
              FROM embedding_switches s, facts f GROUP BY s.state""",
        )
        assert (state, dims) == ("switched", [40])
