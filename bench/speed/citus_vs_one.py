"""One PostgreSQL against a Citus cluster (a coordinator and two workers on loopback, the
store distributed by tenant): p50/p95 of search, recall, one stored episode and a trivial
statement, over the same memories of many tenants, each request as one of them in turn.

Floors from the same run: the model alone (embedding one query, as search does) and a
`SELECT 1` in a tenant's transaction (a round trip, and on the cluster the coordinator's
settings sent as SET LOCAL). Also the write rate through the API (each tenant's last 250
episodes in one POST /v1/episodes/batch, after the rest are in) and the machine's busy CPU
time per round of the timed requests (every process: this one, which serves in-process, and
the PostgreSQL servers).

All but those last 250 episodes of each tenant are inserted straight into PostgreSQL, as
`seed_sql` does (vectors composed from the model's embeddings of the sentences' parts, the
keyword triggers on): through the API, 100,000 episodes take longer than the rest of the run
together. Starts its own servers and builds Citus once, so run it alone:

    python -m bench.speed.citus_vs_one --tenants 20 --episodes 100000 --requests 200
"""

import argparse
import asyncio
import logging
import os
import random
import time
from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg
import httpx
from sqlalchemy import text

from app.core.config import JobSettings, Settings
from app.core.scope import SYSTEM, Scope, scoped_transaction
from app.main import create_app
from app.postgres.citus import has_citus
from app.postgres.db import to_libpq_url
from app.services import api_keys
from bench.speed.load import machine_ticks
from bench.speed.pgbouncer_cost import WORDS, sentence, summary
from bench.speed.seed_sql import insert_episodes, latest_version, load_parts
from tests.support.citus import distributed, migrated_database, start_cluster
from tests.support.clusters import new_primary, private_dir

BATCH = 250


async def _keys(app: Any, tenants: list[str]) -> dict[str, str]:
    """A key of each tenant."""
    secrets = {}
    for tenant in tenants:
        async with scoped_transaction(app.state.sessionmaker, SYSTEM) as session:
            secrets[tenant] = (await api_keys.create_key(session, tenant_id=tenant)).secret
    return secrets


async def _timed(seconds: list[float], call: Callable[[], Awaitable[Any]]) -> None:
    started = time.perf_counter()
    await call()
    seconds.append(time.perf_counter() - started)


async def _round(
    app: Any, http: httpx.AsyncClient, tenant: str, query: str, times: dict[str, list[float]]
) -> None:
    """One of each timed request, as `tenant`."""

    async def select_one() -> None:
        async with scoped_transaction(app.state.sessionmaker, Scope(tenant_id=tenant)) as session:
            await session.execute(text("SELECT 1"))

    async def search() -> None:
        (await http.post("/v1/search", json={"query": query})).raise_for_status()

    async def recall() -> None:
        (await http.post("/v1/recall", json={"topic": query})).raise_for_status()

    async def store() -> None:
        body = {"content": f"user: {query}", "butler": "bench"}
        (await http.post("/v1/episodes", json=body)).raise_for_status()

    await _timed(times["model alone"], lambda: asyncio.to_thread(app.state.embedder.embed, query))
    await _timed(times["SELECT 1"], select_one)
    await _timed(times["search"], search)
    await _timed(times["recall"], recall)
    await _timed(times["store"], store)


TICKS_PER_SECOND = os.sysconf("SC_CLK_TCK")


async def seed_in_sql(database_url: str, tenants: list[str], each: int) -> float:
    """Insert `each` generated episodes of every tenant as the owner; the seconds it took."""
    connection = await asyncpg.connect(to_libpq_url(database_url))
    try:
        if await has_citus(connection):  # the system scope below reaches the shards
            await connection.execute("SET citus.propagate_set_commands = 'local'")
        version = await latest_version(connection)
        await load_parts(connection)
        started = time.perf_counter()
        for number, tenant in enumerate(tenants):
            await insert_episodes(connection, tenant, version, each, random.Random(number))
        seconds = time.perf_counter() - started
        await connection.execute("ANALYZE")
        return seconds
    finally:
        await connection.close()


async def measure(settings: Settings, args: argparse.Namespace) -> dict[str, list[float]]:
    """Seed the tenants' memories, then time each kind of request, tenant after tenant; the
    API's write rate and the busy CPU seconds of the timed requests go in as one-element
    lists ("write rate", "CPU")."""
    app = create_app(settings)
    tenants = [f"tenant-{n:02d}" for n in range(args.tenants)]
    times: dict[str, list[float]] = {
        name: [] for name in ("model alone", "SELECT 1", "search", "recall", "store")
    }
    async with app.router.lifespan_context(app):
        secrets = await _keys(app, tenants)
        clients = {
            tenant: httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app),
                base_url="http://bench",
                headers={"Authorization": f"Bearer {secret}"},
                timeout=120,
            )
            for tenant, secret in secrets.items()
        }
        rng = random.Random(5)
        per_tenant = args.episodes // args.tenants
        first = {"content": "user: first", "butler": "bench"}
        (await clients[tenants[0]].post("/v1/episodes", json=first)).raise_for_status()
        assert settings.database_url is not None  # both setups name their database
        in_sql = await seed_in_sql(settings.database_url, tenants, per_tenant - BATCH)
        print(f"seeded {(per_tenant - BATCH) * len(tenants)} in SQL in {in_sql:.0f} s", flush=True)
        seeding = time.perf_counter()
        for tenant in tenants:
            items = [{"content": f"user: {sentence(rng)}", "butler": "bench"} for _ in range(BATCH)]
            response = await clients[tenant].post("/v1/episodes/batch", json={"items": items})
            response.raise_for_status()
        seeded = time.perf_counter() - seeding
        for tenant in tenants:
            facts = [
                {"subject": "user", "predicate": f"likes {word}", "content": sentence(rng)}
                for word in WORDS[:5]
            ]
            for fact in facts:
                (await clients[tenant].post("/v1/facts", json=fact)).raise_for_status()
        queries = [" ".join(rng.choice(WORDS) for _ in range(4)) for _ in range(args.requests)]
        for query in queries[:10]:
            (await clients[tenants[0]].post("/v1/search", json={"query": query})).raise_for_status()
        busy_before, _ = machine_ticks()
        for index, query in enumerate(queries):
            tenant = tenants[index % len(tenants)]
            await _round(app, clients[tenant], tenant, query, times)
        busy = (machine_ticks()[0] - busy_before) / TICKS_PER_SECOND
        times["write rate"] = [BATCH * len(tenants) / seeded]
        times["CPU"] = [busy]
        for client in clients.values():
            await client.aclose()
    return times


async def run(args: argparse.Namespace) -> None:
    """The same tenants, memories and requests on one server, then on the cluster."""
    logging.getLogger("httpx").setLevel(logging.WARNING)
    common: dict[str, Any] = {
        "db_pool_size": 4,
        "episode_session_gap_minutes": 0,
        "jobs": JobSettings(worker_enabled=False, scheduler_enabled=False),
    }
    base = private_dir("eg-")
    primary = await asyncio.to_thread(new_primary, base)
    try:
        admin = await asyncpg.connect(primary.url())
        await admin.execute("CREATE DATABASE engram")
        await admin.close()
        one = Settings(database_url=primary.url(database="engram"), data_dir=base / "e", **common)
        results = {"one PostgreSQL": await measure(one, args)}
    finally:
        await asyncio.to_thread(primary.stop, "fast")
    cluster, _ = await start_cluster("engram_bench_server")
    try:
        url = await migrated_database(cluster, "engram_bench")
        await distributed(url)
        on_cluster = Settings(
            database_url=url, migrate_on_start=False, data_dir=base / "c", **common
        )
        results["Citus, 2 workers"] = await measure(on_cluster, args)
    finally:
        cluster.stop()
    print(
        f"{args.tenants} tenants, {args.episodes} episodes and {5 * args.tenants} facts, "
        f"{args.requests} requests of each kind, one at a time"
    )
    for setup, times in results.items():
        rate, [busy] = times.pop("write rate"), times.pop("CPU")
        rounds = len(times["search"])
        for name, seconds in times.items():
            print(summary(f"{setup}: {name}", seconds), flush=True)
        print(f"{setup}: writes {rate[0]:.0f} episodes/s through the API (batches of {BATCH})")
        print(
            f"{setup}: busy CPU {1000 * busy / rounds:.1f} ms per round ({rounds} rounds of"
            " the model alone, SELECT 1, search, recall and a store)"
        )


def main() -> None:
    """Parse arguments and run."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tenants", type=int, default=20)
    parser.add_argument("--episodes", type=int, default=2000)
    parser.add_argument("--requests", type=int, default=200)
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
