"""Throw-away PostgreSQL databases for the tests and the benchmarks."""

import os
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import asyncpg
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine

from app.postgres.db import replace_database, start_embedded_postgres, to_async_url, to_libpq_url

# embedding_versions ids are cached per process (app/services/embeddings.py), like in
# production, where the row of a model is never deleted.
KEPT_TABLES = ("alembic_version", "embedding_versions")
# Every other table of the schema emptied, in one statement. On one node TRUNCATE, which
# leaves no dead rows (their autovacuum and grown tables would change a later test's plans
# and activity), of the tables a test wrote only, found by their files' size: TRUNCATE of all
# 60 took 87-165 ms a test, most of it new files for tables already empty, against 4 ms. On a
# Citus cluster, where TRUNCATE truncates every shard (550 ms a test), a superuser deletes the
# rows with triggers and foreign keys off (20 ms). Either way the sequences the tables own
# restart, as TRUNCATE ... RESTART IDENTITY restarts them.
EMPTY_TABLES = f"""DO $$
DECLARE
  tables text[];
  written text[];
  name text;
  seq record;
BEGIN
  SELECT array_agg(format('%I', tablename)) INTO tables FROM pg_tables
   WHERE schemaname = 'public'
     AND tablename <> ALL (ARRAY[{", ".join(f"'{t}'" for t in KEPT_TABLES)}]);
  IF tables IS NULL THEN
    RETURN;
  END IF;
  IF NOT current_setting('is_superuser')::boolean
     OR NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') THEN
    SELECT array_agg(t) INTO written FROM unnest(tables) AS t
     WHERE pg_relation_size(('public.' || t)::regclass) > 0;
    IF written IS NOT NULL THEN
      EXECUTE 'TRUNCATE ' || array_to_string(written, ', ') || ' RESTART IDENTITY CASCADE';
    END IF;
  ELSE
    SET LOCAL citus.propagate_set_commands = 'local';
    SET LOCAL session_replication_role = replica;
    FOREACH name IN ARRAY tables LOOP
      EXECUTE 'DELETE FROM ' || name;
    END LOOP;
  END IF;
  FOR seq IN SELECT s.oid::regclass::text AS name, q.seqstart
               FROM pg_sequence q
               JOIN pg_class s ON s.oid = q.seqrelid
               JOIN pg_depend d ON d.classid = 'pg_class'::regclass AND d.objid = s.oid
                AND d.refclassid = 'pg_class'::regclass AND d.deptype IN ('a', 'i')
               JOIN pg_class t ON t.oid = d.refobjid
              WHERE format('%I', t.relname) = ANY (tables)
                AND t.relnamespace = 'public'::regnamespace
                AND pg_sequence_last_value(q.seqrelid) IS NOT NULL LOOP
    PERFORM setval(seq.name, seq.seqstart, false);
  END LOOP;
END $$"""


# A background writer of a live app (its reference counts, its embedding backlog) may take
# two tables' locks in the other order than the emptying; PostgreSQL then aborts one of them.
EMPTYING_ATTEMPTS = 5
DEADLOCK = "40P01"  # SQLSTATE deadlock_detected


async def _emptying(run: Callable[[], Awaitable[object]]) -> None:
    """`run` the emptying, again when PostgreSQL aborted it to break a deadlock."""
    for attempt in range(EMPTYING_ATTEMPTS):
        try:
            await run()
            return
        except (asyncpg.DeadlockDetectedError, DBAPIError) as error:
            orig = getattr(error, "orig", error)
            if getattr(orig, "sqlstate", None) != DEADLOCK or attempt == EMPTYING_ATTEMPTS - 1:
                raise


async def empty_tables(url: str) -> None:
    """Empty every table of the database at `url` but KEPT_TABLES, as the owner."""
    conn = await asyncpg.connect(to_libpq_url(url))
    try:
        await _emptying(lambda: conn.execute(EMPTY_TABLES))
    finally:
        await conn.close()


async def empty_tables_on(engine: AsyncEngine) -> None:
    """`empty_tables` through an engine of the database's owner."""

    async def run() -> None:
        async with engine.begin() as conn:
            await conn.execute(text(EMPTY_TABLES))

    await _emptying(run)


def scratch_server_url(pgdata: Path) -> str:
    """The server for throw-away databases: DATABASE_URL's, else an embedded one in `pgdata`."""
    if url := os.environ.get("DATABASE_URL"):
        return to_libpq_url(to_async_url(url))
    return start_embedded_postgres(pgdata)


@asynccontextmanager
async def scratch_database(
    server_url: str, prefix: str, *, keep: bool = False
) -> AsyncIterator[str]:
    """A new empty database on the server, yielded as an asyncpg URL and dropped afterwards."""

    name = f"{prefix}_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    admin = await asyncpg.connect(server_url)
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
        try:
            yield to_async_url(replace_database(server_url, name))
        finally:
            if not keep:
                await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await admin.close()


async def terminate_backend(owner: AsyncEngine, pid: int) -> None:
    """Kill the server process `pid` as the database's owner (a request's role may not
    signal a backend it switched from), as a crash or a restart would."""
    async with owner.connect() as conn:
        await conn.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
