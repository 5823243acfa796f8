"""Engram on a Citus cluster: the tables distributed by tenant, and the connections that tell
the shards which tenant a transaction works for.

`distribute` turns a store migrated on a Citus coordinator into a distributed one: the
tables shared by every tenant become reference tables (a copy on every node), every tenant
table is distributed by `tenant_id` and colocated with `episodes` (all of one tenant's rows on
one worker), and the tables read before the tenant is known stay on the coordinator. The
tenant and butler policies of a distributed table are written first as permissive policies
per command holding both rules, per row: Citus refuses subqueries in a distributed table's
policies, and gives the shards a restrictive policy as a permissive one.

On a coordinator every connection propagates `SET LOCAL` to the workers a transaction uses
(`citus.propagate_set_commands`), and app/core/scope.py then sends a transaction's settings
as `SET LOCAL` statements: `set_config` is not propagated, and the shards' row-level policies
would see no tenant.
"""

from typing import Any

import asyncpg
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine

from app.core import rls
from app.core.scope import MULTI_SHARD_KEY, MULTI_SHARD_SETTING, SET_LOCAL_KEY

# Copied to every node: which embedding models exist and which one serves.
REFERENCE_TABLES = ("embedding_versions", "embedding_switches")
# Kept on the coordinator: looked up before the tenant is known (keys, console sessions), one
# queue across tenants (jobs, workers, the backlog's lease), or rows without a tenant.
COORDINATOR_TABLES = (
    "alembic_version",
    "api_keys",
    "console_sessions",
    "embedding_backlog_lease",
    "jobs",
    "memory_events",
    "workers",
)
# Distributed by tenant_id, colocated with the first; a referenced table before its referrers.
DISTRIBUTED_TABLES = (
    "episodes",
    "entities",
    "facts",
    "fact_periods",
    "rules",
    "rule_applications",
    "runs",
    "run_messages",
    "run_feedback",
    "agent_events",
    "reflection_consolidations",
    "procedures",
    "arcs",
    "working_memories",
    "passages",
    "memory_links",
    "keyword_postings",
    "keyword_terms",
    "keyword_corpus",
    "keyword_scope_terms",
    "keyword_scope_corpus",
    "pii_salts",
    "embedding_failures",
)
DISTRIBUTION_COLUMN = "tenant_id"
HAS_CITUS = "SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus')"


async def has_citus(conn: asyncpg.Connection) -> bool:
    """Whether the database has the citus extension."""
    return bool(await conn.fetchval(HAS_CITUS))


async def placements(conn: asyncpg.Connection) -> dict[str, str]:
    """Each table Citus manages: 'distributed' or 'reference'."""
    rows = await conn.fetch(
        "SELECT logicalrelid::regclass::text AS name, partmethod::text AS partmethod "
        "FROM pg_dist_partition"
    )
    return {row["name"]: "reference" if row["partmethod"] == "n" else "distributed" for row in rows}


async def distribute(conn: asyncpg.Connection) -> list[str]:
    """Distribute the store (in one transaction); the tables placed now, in order. Tables
    already placed are left as they are, so running it again places only what is new."""
    if not await has_citus(conn):
        raise RuntimeError("the database has no citus extension: run this on a Citus coordinator")
    placed = await placements(conn)
    done: list[str] = []
    async with conn.transaction():
        await conn.execute("SET LOCAL citus.enable_local_reference_table_foreign_keys = off")
        await conn.execute("SET LOCAL citus.enable_unsafe_triggers = on")
        await conn.execute("SET LOCAL citus.multi_shard_modify_mode = 'sequential'")
        # A store with rows: copying them into the shards fires no trigger, on the workers too.
        # What the triggers keep (keyword statistics, passages' scopes) is copied with its own
        # table, and a trigger's table may not be placed yet.
        await conn.execute("SET LOCAL citus.propagate_set_commands = 'local'")
        await conn.execute("SET LOCAL session_replication_role = replica")
        await conn.execute(rls.ROW_VISIBLE_ON_SHARD_FUNCTION)
        # Again for tables placed before: a store distributed by an earlier version has the
        # restrictive butler policies, which its shards hold as permissive ones.
        for table in rls.BUTLER_LIMITS:
            if table not in COORDINATOR_TABLES:
                for statement in rls.distributed_policy_statements(table):
                    await conn.execute(statement)
        for table in REFERENCE_TABLES:
            if table not in placed:
                await conn.execute("SELECT create_reference_table($1)", table)
                done.append(table)
        for index, table in enumerate(DISTRIBUTED_TABLES):
            if table not in placed:
                colocate = "default" if index == 0 else DISTRIBUTED_TABLES[0]
                await conn.execute(
                    "SELECT create_distributed_table($1, $2, colocate_with => $3)",
                    table,
                    DISTRIBUTION_COLUMN,
                    colocate,
                )
                done.append(table)
        # Placing a table copies its rows to the shards (or nodes) and leaves them in the
        # coordinator's own table as well, unread from then on: emptied here.
        for table in done:
            await conn.execute("SELECT truncate_local_data_after_distributing_table($1)", table)
    return done


def propagate_settings(engine: AsyncEngine, multi_shard_statements: str = "off") -> None:
    """Make each new connection of `engine` to a Citus coordinator send `SET LOCAL` on to the
    workers and plan each statement with its parameters, and mark it so its transactions set
    their scope with `SET LOCAL`; with
    `multi_shard_statements` other than 'off', a statement that runs on more than one shard
    is logged at that level (or refused) but in work across tenants."""
    # A generic plan of a prepared statement cannot route by its parameters: an UPDATE with a
    # subquery or a join then runs on every shard. Each execution is planned with its values.
    setup = [
        "SET citus.propagate_set_commands = 'local'",
        "SET plan_cache_mode = 'force_custom_plan'",
    ]
    if multi_shard_statements != "off":
        setup.append(f"SET {MULTI_SHARD_SETTING} = '{multi_shard_statements}'")

    @event.listens_for(engine.sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, record: Any) -> None:
        citus = bool(dbapi_connection.run_async(lambda conn: conn.fetchval(HAS_CITUS)))
        if citus:
            dbapi_connection.run_async(lambda conn: conn.execute("; ".join(setup)))
        record.info[SET_LOCAL_KEY] = citus
        record.info[MULTI_SHARD_KEY] = citus and multi_shard_statements != "off"
