"""The Alembic revisions build the schema, tear it down and build it again."""

from collections.abc import AsyncIterator

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from app import migrations
from app.db import create_engine, to_libpq_url
from tests.support.database import scratch_database

TABLES = {"episodes", "facts", "rules", "memory_links", "entities", "memory_events",
          "rule_applications", "embedding_versions"}


@pytest.fixture
async def scratch_engine(database_url: str) -> AsyncIterator[AsyncEngine]:
    """An empty database of its own, so downgrades never touch the shared test database."""
    async with scratch_database(to_libpq_url(database_url), "engram_migrations") as url:
        engine = create_engine(url, pool_size=1)
        try:
            yield engine
        finally:
            await engine.dispose()


async def _tables(engine: AsyncEngine) -> set[str]:
    async with engine.connect() as conn:
        rows = await conn.execute(text(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"))
        return {row[0] for row in rows} - {"alembic_version"}


async def _indexes(engine: AsyncEngine) -> dict[str, str]:
    async with engine.connect() as conn:
        rows = await conn.execute(text(
            "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public'"))
        return {row[0]: row[1] for row in rows}


async def test_upgrade_downgrade_upgrade(scratch_engine: AsyncEngine) -> None:
    await migrations.upgrade(scratch_engine)
    assert TABLES <= await _tables(scratch_engine)
    assert await migrations.is_at_head(scratch_engine)

    await migrations.downgrade(scratch_engine, "base")
    assert await _tables(scratch_engine) == set()

    await migrations.upgrade(scratch_engine)
    assert TABLES <= await _tables(scratch_engine)


async def test_schema_has_spec_indexes_with_hnsw(scratch_engine: AsyncEngine) -> None:
    await migrations.upgrade(scratch_engine)
    indexes = await _indexes(scratch_engine)
    for table in ("episodes", "facts", "rules"):
        definition = indexes[f"ix_{table}_embedding_hnsw"]
        assert "USING hnsw" in definition and "vector_cosine_ops" in definition
        assert "USING gin" in indexes[f"ix_{table}_search_vector"]
    assert "WHERE ((entity_id IS NOT NULL) AND (validity = 'active'" in indexes[
        "uq_facts_entity_scope_predicate_active"]
    assert "WHERE ((entity_id IS NULL) AND (validity = 'active'" in indexes[
        "uq_facts_scope_subject_predicate_active"]
    assert "(target_type, target_id)" in indexes["ix_memory_links_target"]
    assert "(event_type, created_at DESC)" in indexes["ix_memory_events_type_created"]
    assert "(tenant_id, created_at DESC)" in indexes["ix_memory_events_tenant_created"]


async def test_every_memory_table_has_tenant_id(scratch_engine: AsyncEngine) -> None:
    await migrations.upgrade(scratch_engine)
    async with scratch_engine.connect() as conn:
        rows = await conn.execute(text(
            "SELECT table_name, is_nullable, column_default FROM information_schema.columns "
            "WHERE column_name = 'tenant_id' AND table_schema = 'public'"))
        columns = {row[0]: (row[1], row[2]) for row in rows}
    for table in ("episodes", "facts", "rules", "memory_links", "entities", "rule_applications"):
        assert columns[table] == ("NO", "'default'::text")


async def test_link_relation_is_constrained(scratch_engine: AsyncEngine) -> None:
    await migrations.upgrade(scratch_engine)
    with pytest.raises(Exception, match="relation"):
        async with scratch_engine.begin() as conn:
            await conn.execute(text(
                "INSERT INTO memory_links (source_type, source_id, target_type, target_id, "
                "relation) VALUES ('fact', gen_random_uuid(), 'fact', gen_random_uuid(), "
                "'likes')"))
