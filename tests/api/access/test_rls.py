"""Row-level security: every tenant table carries the policy, and the database enforces it."""

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from app.core.rls import POLICY_NAME
from app.core.scope import SYSTEM, Scope, scoped_transaction
from tests.support.http import post

TENANT_TABLES = """
    SELECT c.table_name FROM information_schema.columns c
    JOIN information_schema.tables t USING (table_schema, table_name)
    WHERE c.table_schema = 'public' AND c.column_name = 'tenant_id'
      AND t.table_type = 'BASE TABLE'
"""


async def test_every_tenant_table_has_forced_rls_and_the_policy(sql):
    # A table added with a tenant_id column must call app.core.rls.enable_tenant_rls in its
    # migration; this lists the ones that did not.
    rows = await sql(f"""
        SELECT tables.table_name, cls.relrowsecurity, cls.relforcerowsecurity,
               EXISTS (SELECT 1 FROM pg_policies p WHERE p.schemaname = 'public'
                       AND p.tablename = tables.table_name
                       AND p.policyname = '{POLICY_NAME}') AS has_policy
        FROM ({TENANT_TABLES}) tables
        JOIN pg_class cls ON cls.oid = ('public.' || quote_ident(tables.table_name))::regclass
    """)
    assert len(rows) >= 10
    unprotected = [
        r["table_name"]
        for r in rows
        if not (r["relrowsecurity"] and r["relforcerowsecurity"] and r["has_policy"])
    ]
    assert unprotected == []


async def test_no_tenant_id_has_a_default(sql):
    rows = await sql(
        "SELECT table_name FROM information_schema.columns WHERE "
        "table_schema = 'public' AND column_name = 'tenant_id' "
        "AND column_default IS NOT NULL"
    )
    assert rows == []


async def test_memory_links_are_keyed_by_tenant(sql):
    [key] = await sql(
        "SELECT pg_get_constraintdef(oid) AS definition FROM pg_constraint "
        "WHERE conrelid = 'memory_links'::regclass AND contype = 'p'"
    )
    assert "tenant_id" in key["definition"]


async def test_requests_run_as_a_role_rls_binds(app):
    async with app.state.db_engine.connect() as conn:
        row = (
            await conn.execute(
                text(
                    "SELECT current_user AS name, rolsuper, rolbypassrls FROM pg_roles "
                    "WHERE rolname = current_user"
                )
            )
        ).one()
    assert row.name == "engram_app"
    assert not row.rolsuper and not row.rolbypassrls


async def _count_facts(app, scope: Scope) -> int:
    async with scoped_transaction(app.state.sessionmaker, scope) as session:
        return int((await session.execute(text("SELECT count(*) FROM facts"))).scalar_one())


async def test_a_tenant_transaction_sees_only_its_rows_without_any_where(app, tenant_client):
    for tenant, count in (("tenant-a", 2), ("tenant-b", 1)):
        client = await tenant_client(tenant)
        for i in range(count):
            await post(client, "/v1/facts", subject=f"S{i}", predicate="p", content=f"c {i}")
    assert await _count_facts(app, Scope(tenant_id="tenant-a")) == 2
    assert await _count_facts(app, Scope(tenant_id="tenant-b")) == 1
    assert await _count_facts(app, SYSTEM) == 3


async def test_a_transaction_without_a_tenant_sees_and_writes_nothing(app, tenant_client):
    await post(
        await tenant_client("tenant-a"), "/v1/facts", subject="S", predicate="p", content="c"
    )
    assert await _count_facts(app, Scope()) == 0
    with pytest.raises(DBAPIError, match="row-level security"):
        async with scoped_transaction(app.state.sessionmaker, Scope(tenant_id="b")) as session:
            await session.execute(
                text("INSERT INTO rules (tenant_id, content, scope) VALUES ('a', 'x', 'global')")
            )
