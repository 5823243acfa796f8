"""The Alembic revisions build the schema, tear it down and build it again."""

import asyncio
import time
from collections.abc import AsyncIterator

import pytest
from alembic.script import ScriptDirectory
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from app.postgres import migrations
from app.postgres.db import create_engine, to_libpq_url
from tests.support.database import scratch_database

TABLES = {
    "episodes",
    "facts",
    "rules",
    "memory_links",
    "entities",
    "memory_events",
    "rule_applications",
    "embedding_versions",
}


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
        rows = await conn.execute(
            text("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        )
        return {row[0] for row in rows} - {"alembic_version"}


async def _indexes(engine: AsyncEngine) -> dict[str, str]:
    async with engine.connect() as conn:
        rows = await conn.execute(
            text("SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public'")
        )
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
    assert (
        "WHERE ((entity_id IS NOT NULL) AND (validity = 'active'"
        in indexes["uq_facts_entity_scope_predicate_active"]
    )
    assert (
        "WHERE ((entity_id IS NULL) AND (validity = 'active'"
        in indexes["uq_facts_scope_subject_predicate_active"]
    )
    assert "(target_type, target_id)" in indexes["ix_memory_links_target"]
    assert "(event_type, created_at DESC)" in indexes["ix_memory_events_type_created"]
    assert "(tenant_id, created_at DESC)" in indexes["ix_memory_events_tenant_created"]


async def test_every_memory_table_has_tenant_id(scratch_engine: AsyncEngine) -> None:
    await migrations.upgrade(scratch_engine)
    async with scratch_engine.connect() as conn:
        rows = await conn.execute(
            text(
                "SELECT table_name, is_nullable, column_default FROM information_schema.columns "
                "WHERE column_name = 'tenant_id' AND table_schema = 'public'"
            )
        )
        columns = {row[0]: (row[1], row[2]) for row in rows}
    # No default since mem_012: a row without a tenant is an error, not tenant 'default'.
    for table in ("episodes", "facts", "rules", "memory_links", "entities", "rule_applications"):
        assert columns[table] == ("NO", None)


async def test_link_relation_is_constrained(scratch_engine: AsyncEngine) -> None:
    await migrations.upgrade(scratch_engine)
    with pytest.raises(Exception, match="relation"):
        async with scratch_engine.begin() as conn:
            await conn.execute(
                text(
                    "INSERT INTO memory_links (tenant_id, source_type, source_id, target_type, "
                    "target_id, relation) VALUES ('t', 'fact', gen_random_uuid(), 'fact', "
                    "gen_random_uuid(), 'likes')"
                )
            )


async def test_mem_009_moves_state_out_of_metadata_and_back(scratch_engine: AsyncEngine) -> None:
    await migrations.upgrade(scratch_engine, "mem_008")
    async with scratch_engine.begin() as conn:
        await conn.execute(
            text("""
            INSERT INTO entities (id, canonical_name, entity_type, metadata) VALUES
              ('00000000-0000-0000-0000-00000000000a', 'Target', 'person', '{}'),
              ('00000000-0000-0000-0000-00000000000b', 'Source', 'person',
               '{"merged_into": "00000000-0000-0000-0000-00000000000a", "k": 1}')""")
        )
        await conn.execute(
            text("""
            INSERT INTO rules (id, content, maturity, harmful_count, effectiveness_score,
                               metadata) VALUES
              ('00000000-0000-0000-0000-000000000001', 'gone', 'candidate', 0, 0,
               '{"forgotten": true, "status": "fading", "team": "ops"}'),
              ('00000000-0000-0000-0000-000000000002', 'flagged', 'candidate', 3, 0,
               '{"needs_inversion": true, "harmful_reasons": ["bad"]}'),
              ('00000000-0000-0000-0000-000000000003', 'forged', 'candidate', 0, 0,
               '{"needs_inversion": true}'),
              ('00000000-0000-0000-0000-000000000004', 'ANTI-PATTERN: x', 'anti_pattern', 3, 0,
               '{"original_content": "x", "needs_inversion": false}')""")
        )
        await conn.execute(
            text("""
            INSERT INTO rule_applications (rule_id, outcome, reason) VALUES
              ('00000000-0000-0000-0000-000000000002', 'harmful', 'bad')""")
        )
        await conn.execute(
            text("""
            INSERT INTO facts (subject, predicate, content, metadata, created_at) VALUES
              ('Alice', 'lives_in', 'Boston', '{"status": "fading"}', now() - interval '1 day'),
              ('alice ', 'Lives_In', 'Denver', '{}', now())""")
        )
    await migrations.upgrade(scratch_engine)
    async with scratch_engine.connect() as conn:
        rules = {
            row.content: row
            for row in await conn.execute(
                text(
                    "SELECT content, forgotten_at IS NOT NULL AS "
                    "forgotten, fading_since IS NOT NULL "
                    "AS fading, needs_inversion, original_content, metadata FROM rules"
                )
            )
        }
        facts = {
            row.content: row
            for row in await conn.execute(
                text(
                    "SELECT content, validity, subject_key, predicate_key, "
                    "fading_since IS NOT NULL AS fading, metadata FROM facts"
                )
            )
        }
        [source] = await conn.execute(
            text(
                "SELECT merged_into_id::text, metadata FROM entities "
                "WHERE canonical_name = 'Source'"
            )
        )
    assert (rules["gone"].forgotten, rules["gone"].fading, rules["gone"].metadata) == (
        True,
        True,
        {"team": "ops"},
    )
    assert (rules["flagged"].needs_inversion, rules["flagged"].metadata) == (True, {})
    assert (rules["forged"].needs_inversion, rules["forged"].metadata) == (False, {})
    assert rules["ANTI-PATTERN: x"].original_content == "x"
    assert (facts["Boston"].validity, facts["Boston"].fading, facts["Boston"].metadata) == (
        "superseded",
        True,
        {},
    )
    assert (
        facts["Denver"].validity,
        facts["Denver"].subject_key,
        facts["Denver"].predicate_key,
    ) == ("active", "alice", "lives_in")
    assert tuple(source) == ("00000000-0000-0000-0000-00000000000a", {"k": 1})

    await migrations.downgrade(scratch_engine, "mem_008")
    async with scratch_engine.connect() as conn:
        metadata = {
            row.content: row.metadata
            for row in await conn.execute(text("SELECT content, metadata FROM rules"))
        }
        [source_metadata] = (
            await conn.execute(
                text("SELECT metadata FROM entities WHERE canonical_name = 'Source'")
            )
        ).scalars()
    assert metadata["gone"] == {"forgotten": True, "status": "fading", "team": "ops"}
    assert metadata["flagged"] == {"needs_inversion": True, "harmful_reasons": ["bad"]}
    assert metadata["ANTI-PATTERN: x"] == {"original_content": "x"}
    assert source_metadata == {"merged_into": "00000000-0000-0000-0000-00000000000a", "k": 1}


async def test_migrations_wait_for_the_advisory_lock(scratch_engine: AsyncEngine) -> None:
    async with scratch_engine.connect() as holder:
        await holder.execute(
            text("SELECT pg_advisory_lock(:key)"), {"key": migrations.MIGRATION_LOCK_KEY}
        )
        # The lock is the session's; an open transaction here would hold up the waiting
        # upgrade's CREATE INDEX CONCURRENTLY once it has the lock.
        await holder.commit()
        other = create_engine(scratch_engine.url.render_as_string(hide_password=False), pool_size=1)
        try:
            upgrade = asyncio.create_task(migrations.upgrade(other))
            holder_pid = (await holder.execute(text("SELECT pg_backend_pid()"))).scalar_one()
            # The latest statement of the database's other sessions: only the waiting upgrade's
            # move on, each time it asks for the lock again.
            asked = (
                "SELECT max(query_start) FROM pg_stat_activity "
                "WHERE datname = current_database() "
                f"AND pid NOT IN (pg_backend_pid(), {holder_pid})"
            )
            seen: set[object] = set()
            async with scratch_engine.connect() as watcher:
                deadline = time.monotonic() + 60
                # Asked and refused again and again while the holder keeps the lock.
                while len(seen - {None}) < 4 and not upgrade.done():
                    seen.add((await watcher.execute(text(asked))).scalar_one())
                    await watcher.rollback()
                    assert time.monotonic() < deadline, "the upgrade never asked for the lock"
                    await asyncio.sleep(0.05)
            assert not upgrade.done()
            await holder.execute(
                text("SELECT pg_advisory_unlock(:key)"), {"key": migrations.MIGRATION_LOCK_KEY}
            )
            # An open transaction holds back a revision that builds an index concurrently.
            await holder.commit()
            await asyncio.wait_for(upgrade, timeout=120)
        finally:
            await other.dispose()
    assert await migrations.is_at_head(scratch_engine)


async def test_mem_012_rls_comes_off_and_back(scratch_engine: AsyncEngine) -> None:
    await migrations.upgrade(scratch_engine)

    async def protected() -> set[str]:
        async with scratch_engine.connect() as conn:
            rows = await conn.execute(
                text("SELECT relname FROM pg_class WHERE relrowsecurity AND relforcerowsecurity")
            )
            return {row[0] for row in rows}

    assert {"episodes", "facts", "memory_links", "jobs", "api_keys"} <= await protected()
    await migrations.downgrade(scratch_engine, "mem_010")
    assert await protected() == set()
    await migrations.upgrade(scratch_engine)
    assert "facts" in await protected()


async def test_run_and_ledger_tables_name_their_tenant_on_every_insert(scratch_engine):
    await migrations.upgrade(scratch_engine)
    async with scratch_engine.connect() as conn:
        rows = await conn.execute(
            text(
                "SELECT table_name, is_nullable, column_default FROM information_schema.columns "
                "WHERE column_name = 'tenant_id' AND table_schema = 'public'"
            )
        )
        columns = {row[0]: (row[1], row[2]) for row in rows}
    for table in ("runs", "run_messages", "run_feedback", "agent_events"):
        assert columns[table] == ("NO", None)


async def test_mem_017_string_session_ids_and_the_refused_downgrade(
    scratch_engine: AsyncEngine,
) -> None:
    script = ScriptDirectory.from_config(migrations.alembic_config())
    before = str(script.get_revision("mem_017").down_revision)
    await migrations.upgrade(scratch_engine, before)
    kept = "00000000-0000-0000-0000-0000000000aa"
    async with scratch_engine.begin() as conn:
        await conn.execute(
            text(
                "INSERT INTO episodes (tenant_id, butler, content, session_id) "
                "VALUES ('default', 'chat', 'old turn', :session)"
            ),
            {"session": kept},
        )
    await migrations.upgrade(scratch_engine, "mem_017")
    async with scratch_engine.begin() as conn:
        assert (await conn.execute(text("SELECT session_id FROM episodes"))).scalar_one() == kept
        await conn.execute(
            text(
                "INSERT INTO episodes (tenant_id, butler, content, session_id) "
                "VALUES ('default', 'chat', 'new turn', 'chat-42')"
            )
        )

    with pytest.raises(RuntimeError, match="1 episode"):
        await migrations.downgrade(scratch_engine, before)
    async with scratch_engine.begin() as conn:
        await conn.execute(text("DELETE FROM episodes WHERE session_id = 'chat-42'"))
    await migrations.downgrade(scratch_engine, before)
    async with scratch_engine.connect() as conn:
        kind = (
            await conn.execute(
                text(
                    "SELECT data_type FROM information_schema.columns "
                    "WHERE table_name = 'episodes' AND column_name = 'session_id'"
                )
            )
        ).scalar_one()
        assert kind == "uuid"


async def test_mem_021_counts_each_scope_from_the_postings_and_comes_off(
    scratch_engine: AsyncEngine,
) -> None:
    await migrations.upgrade(scratch_engine, "mem_020")
    async with scratch_engine.begin() as conn:
        await conn.execute(
            text(
                "INSERT INTO episodes (tenant_id, butler, content, search_vector) "
                "SELECT tenant_id, butler, content, to_tsvector('english', content) FROM (VALUES "
                "('a', 'chat', 'apple pie and apple tart'), ('a', 'chat', 'a pear'), "
                "('a', 'work', 'apple budget'), ('b', 'chat', 'apple'), ('a', 'chat', 'a')"
                ") AS turns (tenant_id, butler, content)"
            )
        )
        await conn.execute(
            text(
                "INSERT INTO facts (tenant_id, scope, subject, predicate, subject_key, "
                "predicate_key, content, search_vector) VALUES "
                "('a', 'global', 'Ann', 'likes', 'ann', 'likes', 'Ann likes apple pie', "
                "to_tsvector('english', 'Ann likes apple pie'))"
            )
        )
    await migrations.upgrade(scratch_engine)

    async def rows(sql: str) -> list[tuple[object, ...]]:
        async with scratch_engine.connect() as conn:
            return [tuple(row) for row in await conn.execute(text(sql))]

    assert await rows(
        "SELECT tenant_id, scope, term, doc_freq FROM keyword_scope_terms "
        "WHERE term = 'appl' ORDER BY 1, 2"
    ) == [
        ("a", "chat", "appl", 1),
        ("a", "global", "appl", 1),
        ("a", "work", "appl", 1),
        ("b", "chat", "appl", 1),
    ]
    assert await rows(
        "SELECT tenant_id, scope, doc_count, total_len FROM keyword_scope_corpus ORDER BY 1, 2"
    ) == [("a", "chat", 2, 5), ("a", "global", 1, 4), ("a", "work", 1, 2), ("b", "chat", 1, 1)]

    await migrations.downgrade(scratch_engine, "mem_020")
    assert "keyword_scope_terms" not in await _tables(scratch_engine)
    async with scratch_engine.begin() as conn:
        await conn.execute(
            text(
                "INSERT INTO episodes (tenant_id, butler, content, search_vector) "
                "VALUES ('a', 'chat', 'apple', to_tsvector('english', 'apple'))"
            )
        )
    assert await rows(
        "SELECT doc_freq FROM keyword_terms WHERE tenant_id = 'a' AND term = 'appl'"
    ) == [(4,)]


async def test_mem_033_fills_origins_from_links_and_sources(scratch_engine: AsyncEngine) -> None:
    await migrations.upgrade(scratch_engine, "mem_032")
    ids = {
        name: f"00000000-0000-0000-0000-0000000000{n:02d}"
        for n, name in enumerate(
            ("told", "guessed", "run", "fact", "rule", "procedure", "alone", "inferred"), start=1
        )
    }
    async with scratch_engine.begin() as conn:
        await conn.execute(text("SELECT set_config('engram.system', 'on', true)"))
        await conn.execute(
            text("""
            INSERT INTO episodes (id, tenant_id, butler, session_id, inferred_session, content)
            VALUES (:told, 't', 'chat', 's-1', NULL, 'a'),
                   (:guessed, 't', 'mail', NULL, :inferred, 'b')"""),
            ids,
        )
        await conn.execute(
            text("INSERT INTO runs (id, tenant_id, task_id) VALUES (:run, 't', 'task-1')"), ids
        )
        await conn.execute(
            text("""
            INSERT INTO facts (id, tenant_id, subject, predicate, subject_key, predicate_key,
                               content, source_episode_id)
            VALUES (:fact, 't', 'Ann', 'phone', 'ann', 'phone', 'x', :told),
                   (:alone, 't', 'Bob', 'phone', 'bob', 'phone', 'y', NULL)"""),
            ids,
        )
        await conn.execute(
            text("INSERT INTO rules (id, tenant_id, content) VALUES (:rule, 't', 'r')"), ids
        )
        await conn.execute(
            text(
                "INSERT INTO procedures (id, tenant_id, agent_id, name) "
                "VALUES (:procedure, 't', 'chat', 'p')"
            ),
            ids,
        )
        await conn.execute(
            text("""
            INSERT INTO memory_links (tenant_id, source_type, source_id, target_type, target_id,
                                      relation)
            VALUES ('t', 'rule', :rule, 'episode', :guessed, 'derived_from'),
                   ('t', 'rule', :rule, 'run', :run, 'derived_from'),
                   ('t', 'procedure', :procedure, 'episode', :told, 'derived_from')"""),
            ids,
        )
    await migrations.upgrade(scratch_engine)
    async with scratch_engine.begin() as conn:
        await conn.execute(text("SELECT set_config('engram.system', 'on', true)"))
        origins = {
            str(row.id): row.origins
            for row in await conn.execute(
                text(
                    "SELECT id, origins FROM facts UNION ALL SELECT id, origins FROM rules "
                    "UNION ALL SELECT id, origins FROM procedures"
                )
            )
        }
        indexes = {
            row.indexname
            for row in await conn.execute(
                text(
                    "SELECT c.relname AS indexname FROM pg_index i JOIN pg_class c "
                    "ON c.oid = i.indexrelid WHERE i.indisvalid"
                )
            )
        }
    assert origins == {
        ids["fact"]: ["butler:chat", "session:s-1"],
        ids["alone"]: [],
        ids["rule"]: [
            "butler:mail",
            f"run:{ids['run']}",
            f"session:{ids['inferred']}",
            "task:task-1",
        ],
        ids["procedure"]: ["butler:chat", "session:s-1"],
    }
    assert {
        "ix_facts_origins",
        "ix_rules_origins",
        "ix_procedures_origins",
        "ix_facts_source_episode",
        "ix_rules_source_episode",
        "ix_memory_events_link_ends",
    } <= indexes

    await migrations.downgrade(scratch_engine, "mem_032")
    async with scratch_engine.connect() as conn:
        columns = (
            await conn.execute(
                text(
                    "SELECT count(*) FROM information_schema.columns WHERE column_name = 'origins'"
                )
            )
        ).scalar_one()
    assert columns == 0


async def test_two_upgrades_at_once_take_turns(scratch_engine: AsyncEngine) -> None:
    other = create_engine(scratch_engine.url.render_as_string(hide_password=False), pool_size=1)
    try:
        await asyncio.wait_for(
            asyncio.gather(migrations.upgrade(scratch_engine), migrations.upgrade(other)),
            timeout=300,
        )
    finally:
        await other.dispose()
    assert await migrations.is_at_head(scratch_engine)
    async with scratch_engine.connect() as conn:
        invalid = (
            await conn.execute(text("SELECT count(*) FROM pg_index WHERE NOT indisvalid"))
        ).scalar_one()
        system = (
            await conn.execute(text("SELECT coalesce(current_setting('engram.system', true), '')"))
        ).scalar_one()
    assert (invalid, system) == (0, "")


async def test_an_index_built_on_a_large_table_lets_writes_go_on(
    scratch_engine: AsyncEngine,
) -> None:
    await migrations.upgrade(scratch_engine, "mem_024")
    url = scratch_engine.url.render_as_string(hide_password=False)
    other = create_engine(url, pool_size=1)
    try:
        async with scratch_engine.connect() as writing, scratch_engine.connect() as later:
            # A write in progress on episodes when the upgrade starts.
            await writing.execute(text("LOCK TABLE episodes IN ROW EXCLUSIVE MODE"))
            upgrade = asyncio.create_task(migrations.upgrade(other, "mem_025"))
            deadline = time.monotonic() + 60
            while not (
                await later.execute(text("SELECT count(*) FROM pg_locks WHERE NOT granted"))
            ).scalar_one():
                await later.rollback()
                assert not upgrade.done() and time.monotonic() < deadline
                await asyncio.sleep(0.05)
            await later.rollback()
            # The index build waits for that write; a write that comes later goes through.
            await later.execute(text("SET lock_timeout = '3s'"))
            await later.execute(text("UPDATE episodes SET content = content WHERE false"))
            await later.rollback()
            await writing.rollback()
            await asyncio.wait_for(upgrade, timeout=120)
    finally:
        await other.dispose()
    assert "ix_episodes_metadata" in await _indexes(scratch_engine)
