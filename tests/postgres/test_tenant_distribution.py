"""What stands between the migrated schema and distribution by tenant_id (docs/scaling.md,
"Distributing by tenant"): each list there is read from the catalog here, so a schema change
that adds to or removes from one of them fails until the document says so too."""

from typing import Any

import asyncpg
import pytest

from app.postgres.db import to_libpq_url

# Tables that stay on the coordinator or are copied to every node.
WITHOUT_TENANT = {
    "alembic_version",
    "embedding_backlog_lease",
    "embedding_switches",
    "embedding_versions",
    "workers",
}
# System jobs and the events of cross-tenant sweeps have no tenant.
NULLABLE_TENANT = {"jobs", "memory_events"}
# Primary and unique keys without the distribution column: (table, columns). Only tables kept
# on the coordinator: keys and console sessions are looked up before the tenant is known, and
# jobs and audit events may have no tenant.
KEYS_WITHOUT_TENANT = {
    ("api_keys", "id"),
    ("api_keys", "key_hash"),
    ("console_sessions", "id"),
    ("console_sessions", "token_hash"),
    ("jobs", "id"),
    ("jobs", "kind, scheduled_for"),
    ("memory_events", "id"),
}
# Foreign keys between tables that have a tenant_id, none of which includes it:
# (table, columns, referenced table). Both ends stay on the coordinator.
TENANT_FOREIGN_KEYS = {("console_sessions", "key_id", "api_keys")}
# Columns filled from a sequence: (table, column).
SEQUENCED = {
    ("agent_events", "position"),
    ("embedding_versions", "id"),
    ("episodes", "sequence"),
    ("run_messages", "position"),
}
# Trigger functions whose statements find rows by id alone, not by tenant_id.
TRIGGERS_BY_ID_ALONE: set[str] = set()


@pytest.fixture
async def catalog(database_url: str) -> Any:
    """The owner's connection to the migrated test database."""
    conn = await asyncpg.connect(to_libpq_url(database_url))
    try:
        yield conn
    finally:
        await conn.close()


async def _set(conn: Any, query: str) -> set[Any]:
    return {tuple(row) if len(row) > 1 else row[0] for row in await conn.fetch(query)}


async def test_tables_and_the_nullability_of_tenant_id(catalog: Any) -> None:
    tables = await _set(catalog, "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
    with_tenant = await _set(
        catalog,
        """
        SELECT table_name, is_nullable FROM information_schema.columns
        WHERE table_schema = 'public' AND column_name = 'tenant_id'""",
    )
    assert tables - {table for table, _ in with_tenant} == WITHOUT_TENANT
    assert {table for table, nullable in with_tenant if nullable == "YES"} == NULLABLE_TENANT


async def test_keys_and_foreign_keys_without_tenant_id(catalog: Any) -> None:
    unique = await _set(
        catalog,
        """
        SELECT c.relname, pg_get_indexdef(i.indexrelid) FROM pg_index i
        JOIN pg_class c ON c.oid = i.indrelid
        JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = 'public' AND i.indisunique""",
    )
    lacking = {
        (table, definition.split(" USING btree (", 1)[1].split(")", 1)[0])
        for table, definition in unique
        if "tenant_id" not in definition and table not in WITHOUT_TENANT
    }
    assert lacking == KEYS_WITHOUT_TENANT
    foreign = await _set(
        catalog,
        """
        SELECT c.relname, pg_get_constraintdef(con.oid), r.relname FROM pg_constraint con
        JOIN pg_class c ON c.oid = con.conrelid JOIN pg_class r ON r.oid = con.confrelid
        JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = 'public' AND con.contype = 'f'""",
    )
    between_tenants = {
        (table, definition.split("(", 1)[1].split(")", 1)[0], target)
        for table, definition, target in foreign
        if target not in WITHOUT_TENANT and "(tenant_id" not in definition
    }
    assert between_tenants == TENANT_FOREIGN_KEYS


async def test_every_tenant_table_is_bound_by_one_policy_on_tenant_id(catalog: Any) -> None:
    policies = await _set(
        catalog,
        """
        SELECT c.relname, c.relrowsecurity AND c.relforcerowsecurity, p.policyname, p.cmd, p.qual,
               p.permissive
        FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        LEFT JOIN pg_policies p ON p.tablename = c.relname AND p.schemaname = n.nspname
        WHERE n.nspname = 'public' AND c.relkind = 'r'
          AND c.relname NOT IN ('alembic_version', 'embedding_backlog_lease',
                                'embedding_switches', 'embedding_versions', 'workers')""",
    )
    permissive = {policy for policy in policies if policy[5] == "PERMISSIVE"}
    assert {(table, forced, name, command) for table, forced, name, command, *_ in permissive} == {
        (table, True, "tenant_isolation", "ALL") for table, *_ in policies
    }
    assert all("current_setting('engram.tenant_id'" in qual for *_, qual, _ in permissive)
    # The others only narrow what the tenant policy admits (keys limited to butlers).
    assert {
        name.rsplit("_", 1)[0] for _, _, name, _, _, kind in policies if kind != "PERMISSIVE"
    } == {"butler_limit"}


async def test_sequences_and_trigger_lookups_by_id_alone(catalog: Any) -> None:
    sequenced = await _set(
        catalog,
        """
        SELECT table_name, column_name FROM information_schema.columns
        WHERE table_schema = 'public'
          AND (is_identity = 'YES' OR column_default LIKE 'nextval(%')""",
    )
    assert sequenced == SEQUENCED
    bodies = await _set(
        catalog,
        """
        SELECT DISTINCT p.proname, p.prosrc FROM pg_trigger t JOIN pg_proc p ON p.oid = t.tgfoid
        JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = 'public' AND NOT t.tgisinternal""",
    )
    assert {name for name, body in bodies if "tenant_id" not in body} == TRIGGERS_BY_ID_ALONE
