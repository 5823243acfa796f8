"""Alembic revisions after the store was distributed: they run on the coordinator, and what
they change reaches the shards."""

from typing import Any

import asyncpg
import httpx

from app.postgres import migrations
from app.postgres.db import create_engine, to_libpq_url
from tests.support.http import post

DOCUMENTS = "SELECT coalesce(sum(doc_count), 0) FROM keyword_corpus WHERE tenant_id = 'ann'"
COUNT_FUNCTION = (
    "SELECT pg_get_function_identity_arguments(oid) FROM pg_proc"
    " WHERE proname = 'engram_keyword_count_episodes'"
)


async def test_a_later_revision_runs_on_the_distributed_store(
    citus_engram_url: str,
    citus_app: Any,
    citus_tenant_clients: dict[str, httpx.AsyncClient],
) -> None:
    """mem_043 (the batch's keyword counts by tenant) undone and done again on the
    distributed store; a batch then counts its words on its tenant's shard alone (the app
    refuses a statement that runs on more than one)."""
    engine = create_engine(citus_engram_url, pool_size=1)
    conn = await asyncpg.connect(to_libpq_url(citus_engram_url))
    try:
        await migrations.downgrade(engine, "mem_042")
        assert await conn.fetchval(COUNT_FUNCTION) == "ids uuid[]"
        await migrations.upgrade(engine)
        assert await migrations.is_at_head(engine)
        assert await conn.fetchval(COUNT_FUNCTION) == "tenant text, ids uuid[]"

        ann = citus_tenant_clients["ann"]
        documents = await conn.fetchval(DOCUMENTS)
        items = [
            {"content": "Ann: the medlar ripens after frost", "butler": "orchard"},
            {"content": "Ann: medlar jelly needs lemon", "butler": "orchard"},
        ]
        await post(ann, "/v1/episodes/batch", items=items)
        assert await conn.fetchval(DOCUMENTS) == documents + 2
    finally:
        await conn.close()
        await engine.dispose()
    found = await ann.post(
        "/v1/search",
        json={"query": "medlar", "mode": "keyword", "scope": "orchard", "min_confidence": 0},
    )
    assert found.status_code == 200, found.text
    assert len(found.json()["results"]) == 2
