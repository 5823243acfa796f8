"""A worker of the cluster down: the tenants whose shards it holds get 503 with Retry-After,
never a 500, the other worker's tenants are served, and nothing acknowledged before is lost
when it is back."""

import asyncio
from collections.abc import Awaitable, Callable

import asyncpg
import httpx

from app.postgres.db import to_libpq_url
from tests.support.citus import CitusCluster, tenant_elsewhere, worker_port
from tests.support.http import post
from tests.support.waiting import until_async


async def test_a_worker_down_is_503_for_its_tenants_and_loses_nothing(
    citus_cluster: CitusCluster,
    citus_engram_url: str,
    citus_client_of: Callable[[str], Awaitable[httpx.AsyncClient]],
) -> None:
    ann = await citus_client_of("ann")
    kept = await post(
        ann, "/v1/episodes", content="Ann: the loquat flowered in November", butler="chat"
    )
    conn = await asyncpg.connect(to_libpq_url(citus_engram_url))
    try:
        port = await worker_port(conn, "ann")
        other_tenant = await tenant_elsewhere(conn, port)
    finally:
        await conn.close()
    [worker] = [node for node in citus_cluster.workers if node.port == port]
    other = await citus_client_of(other_tenant)
    theirs = await post(other, "/v1/episodes", content="Cy: the quince is ripe", butler="chat")

    await asyncio.to_thread(citus_cluster.stop_node, worker)
    try:
        for response in (
            await ann.get(f"/v1/episodes/{kept['id']}"),
            await ann.post("/v1/episodes", json={"content": "Ann: lost?", "butler": "chat"}),
            await ann.post("/v1/search", json={"query": "loquat"}),
        ):
            assert response.status_code == 503, response.text
            assert response.headers["content-type"].startswith("application/problem+json")
            assert int(response.headers["retry-after"]) > 0
        # The other worker's tenant reads, writes and searches as before.
        assert (await other.get(f"/v1/episodes/{theirs['id']}")).status_code == 200
        while_down = await post(other, "/v1/episodes", content="Cy: the medlar too", butler="chat")
        found = await other.post("/v1/search", json={"query": "quince"})
        assert found.status_code == 200, found.text
        assert theirs["id"] in [hit["id"] for hit in found.json()["results"]]
    finally:
        await asyncio.to_thread(citus_cluster.start_node, worker)

    async def back() -> bool:
        return (await ann.get(f"/v1/episodes/{kept['id']}")).status_code == 200

    await until_async(back, timeout=60, message="the worker serves again")
    listed = await ann.get("/v1/episodes", params={"butler": "chat", "limit": 100})
    assert listed.status_code == 200, listed.text
    contents = [item["content"] for item in listed.json()["items"]]
    assert "Ann: the loquat flowered in November" in contents
    assert "Ann: lost?" not in contents  # refused with 503: not half-written
    assert (await other.get(f"/v1/episodes/{while_down['id']}")).status_code == 200
