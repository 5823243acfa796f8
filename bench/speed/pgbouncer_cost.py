"""What PgBouncer's transaction mode costs search: POST /v1/search p50/p95 with asyncpg's
statement cache (direct to PostgreSQL) and without it (direct, and through pgbouncer), on the
same throw-away server and memories.

Without the cache every statement is sent unnamed and parsed again (db_statement_cache_size
= 0, which PgBouncer 1.18's transaction mode needs): one more round trip and one more parse
per statement. Starts its own server (the embedded binaries) and pgbouncer (installed), so
run it alone on the machine:

    python -m bench.speed.pgbouncer_cost --episodes 2000 --queries 200
"""

import argparse
import asyncio
import logging
import random
import statistics
import time
from typing import Any

import asyncpg
import httpx

from app.core.config import JobSettings, Settings
from app.core.rls import APP_ROLE
from app.main import create_app
from tests.support.clusters import new_primary, private_dir
from tests.support.pgbouncer import start_pgbouncer

WORDS = (
    "kite garden piano river invoice museum ferry violin harvest lantern orchard "
    "ticket glacier bakery compass meadow thunder library tunnel castle"
).split()


def sentence(rng: random.Random) -> str:
    """A short made-up memory."""
    return " ".join(rng.choice(WORDS) for _ in range(12))


def summary(name: str, seconds: list[float]) -> str:
    """'name  p50 x ms  p95 y ms (n)'."""
    ms = sorted(s * 1000 for s in seconds)
    p95 = ms[max(0, round(0.95 * len(ms)) - 1)]
    return f"{name:42s} p50 {statistics.median(ms):7.1f} ms   p95 {p95:7.1f} ms   (n={len(ms)})"


async def timed_searches(settings: Settings, queries: list[str], *, seed: int) -> list[float]:
    """Store `seed` episodes (first run only), then time each search one at a time."""
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(
            transport=transport, base_url="http://bench", timeout=120
        ) as http:
            rng = random.Random(5)
            for start in range(0, seed, 250):
                items = [
                    {"content": sentence(rng), "butler": "bench"}
                    for _ in range(min(250, seed - start))
                ]
                response = await http.post("/v1/episodes/batch", json={"items": items})
                response.raise_for_status()
            for query in queries[:10]:
                (await http.post("/v1/search", json={"query": query})).raise_for_status()
            seconds = []
            for query in queries:
                started = time.perf_counter()
                (await http.post("/v1/search", json={"query": query})).raise_for_status()
                seconds.append(time.perf_counter() - started)
    return seconds


async def run(args: argparse.Namespace) -> None:
    """One server, one pgbouncer; the same searches in each set-up."""
    logging.getLogger("httpx").setLevel(logging.WARNING)
    base = private_dir("eg-")
    primary = await asyncio.to_thread(new_primary, base)
    bouncer = None
    try:
        admin = await asyncpg.connect(primary.url())
        await admin.execute("CREATE DATABASE engram")
        await admin.close()
        bouncer = await asyncio.to_thread(
            start_pgbouncer, primary, users=[APP_ROLE], pool_size=args.server_connections
        )
        rng = random.Random(9)
        queries = [" ".join(rng.choice(WORDS) for _ in range(4)) for _ in range(args.queries)]
        common: dict[str, Any] = {
            "database_url": primary.url(database="engram"),
            "auth_disabled": True,
            "data_dir": base / "engram",
            "db_pool_size": 4,
            "jobs": JobSettings(worker_enabled=False, scheduler_enabled=False),
        }
        setups = [
            ("direct, statement cache 100", {}, args.episodes),
            ("direct, statement cache 0", {"db_statement_cache_size": 0}, 0),
            (
                "pgbouncer (transaction), statement cache 0",
                {"db_statement_cache_size": 0, "app_database_url": bouncer.url(APP_ROLE)},
                0,
            ),
        ]
        for name, extra, seed in setups:
            seconds = await timed_searches(Settings(**common, **extra), queries, seed=seed)
            print(summary(name, seconds), flush=True)
    finally:
        if bouncer is not None:
            bouncer.stop()
        await asyncio.to_thread(primary.stop, "fast")


def main() -> None:
    """Parse arguments and run."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=2000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument(
        "--server-connections", type=int, default=4, help="pgbouncer's default_pool_size"
    )
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
