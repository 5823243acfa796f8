"""A store that grew on one PostgreSQL, moved onto the coordinator as it is (what `pg_restore`
of it gives), then distributed in place with `engram distribute`: every tenant's memories are
on the workers afterwards, found and searched as before, and the coordinator keeps no copy."""

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import httpx

from app.main import create_app
from app.postgres import citus
from app.postgres.db import to_libpq_url
from tests.support.citus import (
    CitusCluster,
    app_settings,
    distributed,
    migrated_database,
    tenant_client,
)
from tests.support.http import post

TENANTS = ("north", "south")


@contextlib.asynccontextmanager
async def _clients(url: str, multi_shard: str) -> AsyncIterator[dict[str, httpx.AsyncClient]]:
    """The app on `url`, its lifespan running, and a client with a new key per tenant."""
    app = create_app(app_settings(url, multi_shard))
    async with contextlib.AsyncExitStack() as stack:
        await stack.enter_async_context(app.router.lifespan_context(app))
        yield {tenant: await tenant_client(stack, app, tenant) for tenant in TENANTS}


async def test_a_single_node_store_distributed_in_place_keeps_every_memory(
    citus_cluster: CitusCluster,
) -> None:
    url = await migrated_database(citus_cluster, "engram_grown")
    stored: dict[str, list[dict[str, Any]]] = {}
    async with _clients(url, "off") as clients:  # the tables still local: one PostgreSQL
        for tenant, client in clients.items():
            first = await post(
                client, "/v1/episodes", content=f"{tenant}: the medlar is ripe", butler="chat"
            )
            second = await post(
                client, "/v1/episodes", content=f"{tenant}: pick it in frost", butler="chat"
            )
            fact = await post(
                client, "/v1/facts", subject=tenant, predicate="grows", content="medlars"
            )
            await post(
                client,
                "/v1/links",
                source_type="episode",
                source_id=first["id"],
                target_type="episode",
                target_id=second["id"],
                relation="related_to",
            )
            stored[tenant] = [first, second, fact]

    await distributed(url)

    conn = await asyncpg.connect(to_libpq_url(url))
    try:
        assert (await citus.placements(conn))["episodes"] == "distributed"
        # The rows were copied into the shards, and the coordinator's own copy emptied.
        assert await conn.fetchval("SELECT count(*) FROM episodes") == 4
        assert await conn.fetchval("SELECT pg_relation_size('episodes')") == 0
    finally:
        await conn.close()

    async with _clients(url, "error") as clients:  # every statement on one shard
        for tenant, client in clients.items():
            first, second, fact = stored[tenant]
            for episode in (first, second):
                got = await client.get(f"/v1/episodes/{episode['id']}")
                assert got.status_code == 200 and got.json()["content"] == episode["content"]
            assert (await client.get(f"/v1/facts/{fact['id']}")).status_code == 200
            found = await client.post("/v1/search", json={"query": "medlar ripe"})
            assert found.status_code == 200, found.text
            ids = [hit["id"] for hit in found.json()["results"]]
            assert first["id"] in ids
            assert all(
                hit["id"] not in ids
                for other in TENANTS
                if other != tenant
                for hit in stored[other]
            )
            links = await client.get(
                "/v1/links", params={"memory_type": "episode", "memory_id": first["id"]}
            )
            assert links.status_code == 200 and second["id"] in links.text
