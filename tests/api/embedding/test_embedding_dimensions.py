"""The store's embedding columns take the model's dimension: any width on a new store
(`halfvec` past 2,000), and a start with a model of another width than the stored vectors'
is refused with what to do."""

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from sqlalchemy import text

from app.core.errors import StartupRefused
from tests.support.embeddings_stub import EmbeddingsStub, embeddings_stub
from tests.support.model_app import client_of, remote_embedder, started

VECTOR_TABLES = {
    "episodes",
    "facts",
    "rules",
    "passages",
    "runs",
    "run_messages",
    "procedures",
    "arcs",
    "agent_events",
}


async def _columns(application: Any) -> dict[str, str]:
    async with application.state.owner_engine.connect() as conn:
        rows = (
            await conn.execute(
                text(
                    "SELECT c.relname || '.' || a.attname, format_type(a.atttypid, a.atttypmod) "
                    "FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
                    "JOIN pg_type t ON t.oid = a.atttypid JOIN "
                    "pg_namespace n ON n.oid = c.relnamespace "
                    "WHERE n.nspname = 'public' AND t.typname IN ('vector', 'halfvec') "
                    "AND c.relkind = 'r' AND NOT a.attisdropped"
                )
            )
        ).all()
    return {str(name): str(type_name) for name, type_name in rows}


async def _vector_indexes(application: Any) -> list[str]:
    async with application.state.owner_engine.connect() as conn:
        return list(
            (
                await conn.execute(
                    text(
                        "SELECT indexdef FROM pg_indexes WHERE schemaname = 'public' "
                        "AND indexdef LIKE '%hnsw%'"
                    )
                )
            ).scalars()
        )


def _assert_one_per_table_and_owned_passages(indexes: list[str]) -> None:
    """One HNSW index per vector table, and the passages of facts and of rules one each of
    their own (rebuilt with their condition)."""
    shared = [index for index in indexes if " WHERE " not in index]
    assert {index.split(" ON public.")[1].split(" ")[0] for index in shared} == VECTOR_TABLES
    assert len(shared) == len(VECTOR_TABLES)
    owned = sorted(index.split(" WHERE ")[1] for index in indexes if " WHERE " in index)
    assert owned == ["(fact_id IS NOT NULL)", "(rule_id IS NOT NULL)"]


async def _store_and_find(http: httpx.AsyncClient) -> None:
    stored = await http.post(
        "/v1/episodes",
        json={"content": "Ann moored her boat at the harbour on Tuesday", "butler": "chat"},
    )
    assert stored.status_code == 201, stored.text
    await http.post("/v1/episodes", json={"content": "Bob baked bread", "butler": "chat"})
    found = await http.post(
        "/v1/search",
        json={"query": "Ann moored her boat at the harbour on Tuesday", "mode": "semantic"},
    )
    assert found.status_code == 200, found.text
    results = found.json()["results"]
    assert results[0]["id"] == stored.json()["id"]
    assert results[0]["similarity"] == pytest.approx(1.0, abs=1e-3)


@pytest.fixture
def stub24() -> Iterator[EmbeddingsStub]:
    with embeddings_stub(dimensions=24) as stub:
        yield stub


async def test_a_new_store_takes_the_models_dimension(scratch_url, stub24, monkeypatch):
    async with started(scratch_url, remote_embedder(stub24), monkeypatch) as application:
        columns = await _columns(application)
        assert {name.split(".")[0] for name in columns} == VECTOR_TABLES
        assert set(columns.values()) == {"vector(24)"}
        indexes = await _vector_indexes(application)
        _assert_one_per_table_and_owned_passages(indexes)
        assert all("vector_cosine_ops" in index for index in indexes)
        async with client_of(application) as http:
            await _store_and_find(http)


async def test_past_2000_dimensions_the_columns_are_halfvec_and_indexed(scratch_url, monkeypatch):
    with embeddings_stub(dimensions=3072) as stub:
        async with started(scratch_url, remote_embedder(stub), monkeypatch) as application:
            columns = await _columns(application)
            assert set(columns.values()) == {"halfvec(3072)"}
            indexes = await _vector_indexes(application)
            _assert_one_per_table_and_owned_passages(indexes)
            assert all("halfvec_cosine_ops" in index for index in indexes)
            async with client_of(application) as http:
                await _store_and_find(http)


async def test_a_model_of_another_dimension_is_refused_once_vectors_are_stored(
    scratch_url, stub24, monkeypatch
):
    async with started(scratch_url, remote_embedder(stub24), monkeypatch) as application:
        async with client_of(application) as http:
            await _store_and_find(http)
    with embeddings_stub(dimensions=48) as wider:
        with pytest.raises(StartupRefused) as refused:
            async with started(scratch_url, remote_embedder(wider), monkeypatch):
                pass
    message = str(refused.value)
    assert "makes 48-d vectors" in message
    assert "holds 2 24-d vectors (made by 'stub-embedding')" in message
    assert "ENGRAM_EMBEDDING_NEXT__MODEL" in message
    assert "`engram reembed --model stub-embedding`" in message
    # The store is as it was: its model starts again and finds what it stored.
    async with started(scratch_url, remote_embedder(stub24), monkeypatch) as application:
        assert set((await _columns(application)).values()) == {"vector(24)"}
