"""A worker of the cluster down: the tenants whose shards it holds get 503 with Retry-After,
never a 500, and nothing acknowledged before is lost when it is back."""

import asyncio

import asyncpg
import httpx

from app.postgres.db import to_libpq_url
from tests.support.citus import CitusCluster
from tests.support.http import post
from tests.support.waiting import until_async

# The port of the worker holding a tenant's episodes.
PLACEMENT = (
    "SELECT nodeport FROM pg_dist_shard_placement"
    " WHERE shardid = get_shard_id_for_distribution_column('episodes', $1::text)"
)


async def test_a_worker_down_is_503_for_its_tenants_and_loses_nothing(
    citus_cluster: CitusCluster,
    citus_engram_url: str,
    citus_tenant_clients: dict[str, httpx.AsyncClient],
) -> None:
    ann = citus_tenant_clients["ann"]
    kept = await post(
        ann, "/v1/episodes", content="Ann: the loquat flowered in November", butler="chat"
    )
    conn = await asyncpg.connect(to_libpq_url(citus_engram_url))
    try:
        port = await conn.fetchval(PLACEMENT, "ann")
    finally:
        await conn.close()
    [worker] = [node for node in citus_cluster.workers if node.port == port]

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
