"""Engram through PgBouncer in transaction pooling mode (Debian's pgbouncer 1.18: no
prepared statements across transactions): requests of several tenants share two server
connections, and no tenant's setting or row is seen by another transaction."""

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import httpx
import pytest

from app.core.config import JobSettings, Settings
from app.core.rls import APP_ROLE
from app.core.scope import SYSTEM, scoped_transaction
from app.main import create_app
from app.repositories import consolidation as consolidation_rows
from app.services import api_keys
from tests.support.clusters import Cluster, create_database, new_primary, private_dir
from tests.support.pgbouncer import PGBOUNCER_PROGRAM, Bouncer, start_pgbouncer
from tests.support.tools import needs

pytestmark = [
    pytest.mark.timeout(600),
    needs(PGBOUNCER_PROGRAM, install="apt-get install pgbouncer"),
]

SERVER_CONNECTIONS = 2
TENANTS = 4


@pytest.fixture(scope="module")
async def pooled() -> AsyncIterator[tuple[Cluster, Bouncer]]:
    """A server with database `engram`, and pgbouncer in front of it."""
    primary = await asyncio.to_thread(new_primary, private_dir("eg-"))
    bouncer: Bouncer | None = None
    try:
        await create_database(primary, "engram")
        bouncer = await asyncio.to_thread(
            start_pgbouncer, primary, users=[APP_ROLE], pool_size=SERVER_CONNECTIONS
        )
        yield primary, bouncer
    finally:
        if bouncer is not None:
            bouncer.stop()
        await asyncio.to_thread(primary.stop, "immediate")


@pytest.fixture(scope="module")
async def pooled_app(pooled: tuple[Cluster, Bouncer], tmp_path_factory: Any) -> AsyncIterator[Any]:
    """Engram migrating directly and serving requests through pgbouncer, statement cache off."""
    primary, bouncer = pooled
    settings = Settings(
        database_url=primary.url(database="engram"),
        app_database_url=bouncer.url(APP_ROLE),
        db_statement_cache_size=0,
        db_pool_size=8,
        data_dir=tmp_path_factory.mktemp("engram"),
        jobs=JobSettings(worker_enabled=False, scheduler_enabled=False),
    )
    application = create_app(settings)
    async with application.router.lifespan_context(application):
        yield application


async def client_for(app: Any, tenant_id: str) -> httpx.AsyncClient:
    async with scoped_transaction(app.state.sessionmaker, SYSTEM) as session:
        minted = await api_keys.create_key(session, tenant_id=tenant_id)
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app),
        timeout=60,
        base_url="http://engram.test",
        headers={"Authorization": f"Bearer {minted.secret}"},
    )


async def unscoped_probe(bouncer: Bouncer) -> tuple[str | None, int, int]:
    """A transaction through pgbouncer that sets no tenant: the tenant setting it finds, the
    facts it sees, and the server connection (backend pid) it ran on."""
    connection = await asyncpg.connect(bouncer.url(APP_ROLE), statement_cache_size=0)
    try:
        async with connection.transaction():
            row = await connection.fetchrow(
                "SELECT current_setting('engram.tenant_id', true) AS tenant,"
                " (SELECT count(*) FROM facts) AS facts, pg_backend_pid() AS pid"
            )
    finally:
        await connection.close()
    return row["tenant"], row["facts"], row["pid"]


async def test_tenants_sharing_server_connections_never_see_each_other(pooled, pooled_app):
    primary, bouncer = pooled
    clients = {f"tenant-{i}": await client_for(pooled_app, f"tenant-{i}") for i in range(TENANTS)}
    tokens = {tenant: f"token{uuid.uuid4().hex[:10]}" for tenant in clients}
    probes: list[tuple[str | None, int, int]] = []
    seen: dict[str, set[str]] = {tenant: set() for tenant in clients}

    async def tenant_loop(tenant: str, http: httpx.AsyncClient) -> None:
        for turn in range(6):
            stored = await http.post(
                "/v1/facts",
                json={
                    "subject": tenant,
                    "predicate": f"turn{turn}",
                    "content": f"{tokens[tenant]} kept note {turn} about lighthouses",
                },
            )
            assert stored.status_code == 201, stored.text
            for query in ("lighthouses", *tokens.values()):
                found = await http.post("/v1/search", json={"query": query, "mode": "keyword"})
                assert found.status_code == 200, found.text
                seen[tenant].update(hit["content"].split()[0] for hit in found.json()["results"])
            listed = await http.get("/v1/facts", params={"limit": 100})
            assert listed.status_code == 200, listed.text
            seen[tenant].update(item["content"].split()[0] for item in listed.json()["items"])

    async def probe_loop() -> None:
        for _ in range(30):
            probes.append(await unscoped_probe(bouncer))

    try:
        await asyncio.gather(
            probe_loop(), *(tenant_loop(tenant, http) for tenant, http in clients.items())
        )
    finally:
        for http in clients.values():
            await http.aclose()
    # Each tenant saw its own token and no other's.
    assert seen == {tenant: {token} for tenant, token in tokens.items()}
    # A transaction that sets no tenant found no setting left behind and no row, on the same
    # few server connections the tenants' transactions used.
    assert {(tenant or "", facts) for tenant, facts, _ in probes} == {("", 0)}
    assert len({pid for _, _, pid in probes}) <= SERVER_CONNECTIONS
    admin = await asyncpg.connect(primary.url(database="engram"))
    try:
        app_connections = await admin.fetchval(
            "SELECT count(*) FROM pg_stat_activity WHERE usename = $1", APP_ROLE
        )
        stored = await admin.fetchval("SELECT count(*) FROM facts")
    finally:
        await admin.close()
    assert app_connections <= SERVER_CONNECTIONS
    assert stored == TENANTS * 6


async def _advisory_locks(primary: Cluster) -> int:
    admin = await asyncpg.connect(primary.url(database="engram"))
    try:
        return int(
            await admin.fetchval(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted"
            )
        )
    finally:
        await admin.close()


async def test_a_consolidation_group_lock_is_held_by_one_worker_and_released(pooled, pooled_app):
    primary, _ = pooled
    engine = pooled_app.state.sessionmaker.kw["bind"]
    group = {"tenant_id": "tenant-lock", "butler": "chat"}
    async with engine.connect() as first, engine.connect() as second:
        assert await consolidation_rows.try_lock_group(first, **group)
        # Another worker, whatever server connection pgbouncer gives it, finds it taken.
        for _ in range(3):
            assert not await consolidation_rows.try_lock_group(second, **group)
        await consolidation_rows.unlock_group(first, **group)
        assert await _advisory_locks(primary) == 0
        assert await consolidation_rows.try_lock_group(second, **group)
        await consolidation_rows.unlock_group(second, **group)
    assert await _advisory_locks(primary) == 0
