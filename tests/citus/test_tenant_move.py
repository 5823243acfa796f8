"""A busy tenant isolated to a shard of its own and moved to the other worker while a client
writes and searches as it: no request fails and every acknowledged write is found after.

The isolation blocks the tenant's writes while it copies (Citus's logical split stops on
`keyword_corpus`: "publisher did not send replica identity column"); the requests wait. The
move itself is logical: writes go on while it copies."""

import asyncio
import time
from collections.abc import Awaitable, Callable

import asyncpg
import httpx

from app.postgres.db import to_libpq_url
from tests.support.citus import HOST, SHARD_OF_TENANT, CitusCluster, worker_port
from tests.support.http import post
from tests.support.waiting import until_async

TENANT = "mover"
# Requests answered after the move returned, so some ran against the new placement.
AFTER_MOVE = 6


class Load:
    """A client storing and searching as one tenant in a loop, noting every answer."""

    def __init__(self, client: httpx.AsyncClient) -> None:
        self.client = client
        self.stored: list[str] = []
        self.failures: list[str] = []
        self.answered: list[float] = []  # when each request was answered (monotonic)
        self.stop = asyncio.Event()

    async def run(self) -> None:
        """Store one episode then search, until told to stop."""
        n = 0
        while not self.stop.is_set():
            n += 1
            stored = await self.client.post(
                "/v1/episodes", json={"content": f"Mo: loquat number {n}", "butler": "chat"}
            )
            self._note(stored, 201)
            if stored.status_code == 201:
                self.stored.append(stored.json()["id"])
            self._note(await self.client.post("/v1/search", json={"query": "loquat"}), 200)

    def _note(self, response: httpx.Response, expected: int) -> None:
        self.answered.append(time.monotonic())
        if response.status_code != expected:
            self.failures.append(
                f"{response.request.url.path}: {response.status_code} {response.text}"
            )


async def test_a_busy_tenant_moves_to_the_other_worker_without_a_failed_request(
    citus_cluster: CitusCluster,
    citus_engram_url: str,
    citus_client_of: Callable[[str], Awaitable[httpx.AsyncClient]],
) -> None:
    client = await citus_client_of(TENANT)
    before = await post(client, "/v1/episodes", content="Mo: the loquat flowered", butler="chat")
    conn = await asyncpg.connect(to_libpq_url(citus_engram_url))
    load = Load(client)
    running = asyncio.create_task(load.run())
    try:
        # A shard of its own first, then that shard (and its colocated ones) to the other worker.
        shard = await conn.fetchval(
            "SELECT isolate_tenant_to_new_shard('episodes', $1::text, 'CASCADE',"
            " shard_transfer_mode => 'block_writes')",
            TENANT,
        )
        assert shard == await conn.fetchval(SHARD_OF_TENANT, TENANT)
        source = await worker_port(conn, TENANT)
        [target] = [w.port for w in citus_cluster.workers if w.port != source]
        started = time.monotonic()
        await conn.execute(
            "SELECT citus_move_shard_placement($1, $2, $3, $2, $4,"
            " shard_transfer_mode => 'force_logical')",
            shard,
            HOST,
            source,
            target,
        )
        moved = time.monotonic()
        assert await worker_port(conn, TENANT) == target

        async def served_after() -> bool:
            return sum(t > moved for t in load.answered) >= AFTER_MOVE or running.done()

        await until_async(served_after, timeout=60, message="requests after the move")
    finally:
        load.stop.set()
        await running
        await conn.close()

    assert load.failures == []
    during = [t for t in load.answered if started <= t <= moved]
    after = [t for t in load.answered if t > moved]
    assert during and after, "the load ran while the shard moved and after"
    for episode_id in [before["id"], *load.stored]:
        found = await client.get(f"/v1/episodes/{episode_id}")
        assert found.status_code == 200, found.text
