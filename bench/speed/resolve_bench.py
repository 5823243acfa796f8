"""Resolve latency with 100,000 entities: median and p95 per kind of query.

Seeds a throw-away database (on DATABASE_URL's server, else the embedded PostgreSQL the tests
use) with pseudo-word names via SQL, then calls POST /v1/entities/resolve in-process.

    python -m bench.speed.resolve_bench [--entities 100000] [--runs 40]
"""

import argparse
import asyncio
import random
import statistics
import time
from pathlib import Path
from typing import Any

import asyncpg
import httpx

from app.core.config import Settings
from app.main import create_app
from app.postgres import migrations
from app.postgres.db import create_engine, to_libpq_url
from tests.support.database import scratch_database, scratch_server_url

REPO_ROOT = Path(__file__).resolve().parents[2]

SYLLABLES = [
    "ka",
    "lo",
    "mi",
    "ra",
    "ne",
    "to",
    "su",
    "vi",
    "de",
    "an",
    "el",
    "or",
    "is",
    "ba",
    "chi",
    "tho",
    "qua",
    "zo",
    "pe",
    "li",
    "mar",
    "gan",
    "wen",
    "dru",
]

SEED_SQL = """
WITH words AS (
    SELECT i,
           initcap(s[1 + (h1 % n)] || s[1 + (h1 / n % n)] || s[1 + (h1 / n / n % n)]) AS first,
           initcap(s[1 + (h2 % n)] || s[1 + (h2 / n % n)] || s[1 + (h2 / n / n % n)]
                   || s[1 + (h2 / n / n / n % n)]) AS last
    FROM generate_series(1, $1) AS i,
         LATERAL (SELECT $2::text[] AS s, cardinality($2::text[]) AS n) AS syl,
         LATERAL (SELECT abs(hashint4(i)) AS h1, abs(hashint4(i + 7919)) AS h2) AS h
)
INSERT INTO entities (tenant_id, canonical_name, entity_type, aliases)
SELECT 'default', first || ' ' || last || CASE WHEN i % 3 = 0 THEN ' ' || i ELSE '' END,
       (ARRAY['person', 'organization', 'place', 'other'])[1 + i % 4],
       CASE WHEN i % 2 = 0 THEN ARRAY[first, lower(last) || i] ELSE ARRAY[first] END
FROM words
"""

FACTS_SQL = """
INSERT INTO facts (tenant_id, subject, predicate, subject_key, predicate_key, content,
                   entity_id)
SELECT 'default', e.canonical_name, 'p' || g, lower(e.canonical_name), 'p' || g,
       'works at ' || e.canonical_name || ' club ' || g, e.id
FROM (SELECT id, canonical_name FROM entities ORDER BY id LIMIT $1) AS e,
     generate_series(1, 5) AS g
"""


def typo(word: str) -> str:
    i = len(word) // 2
    return word[:i] + word[i + 1] + word[i] + word[i + 2 :]


async def timed(client: httpx.AsyncClient, body: dict[str, Any], runs: int) -> list[float]:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        response = await client.post("/v1/entities/resolve", json=body)
        samples.append((time.perf_counter() - start) * 1000)
        assert response.status_code == 200, response.text
    return samples


async def main(entities: int, runs: int, keep: bool) -> None:
    server_url = scratch_server_url(REPO_ROOT / ".pytest-pg")
    async with scratch_database(server_url, "engram_bench", keep=keep) as db_url:
        if keep:
            print(f"keeping database {db_url}")
        engine = create_engine(db_url, pool_size=1)
        await migrations.upgrade(engine)
        await engine.dispose()
        conn = await asyncpg.connect(to_libpq_url(db_url))
        started = time.perf_counter()
        await conn.execute(SEED_SQL, entities, SYLLABLES)
        await conn.execute(FACTS_SQL, min(entities, 20_000))
        await conn.execute("ANALYZE entities; ANALYZE facts")
        print(
            f"seeded {entities} entities, {min(entities, 20_000) * 5} facts "
            f"in {time.perf_counter() - started:.1f}s"
        )
        rows = await conn.fetch(
            "SELECT canonical_name, aliases FROM entities ORDER BY random() LIMIT 200"
        )
        await conn.close()

        random.seed(7)
        sample = [dict(row) for row in rows]
        names = [row["canonical_name"] for row in sample]
        aliases = [row["aliases"][-1] for row in sample if len(row["aliases"]) > 1]
        last_words = [n.split(" ")[1] for n in names]
        cases: dict[str, list[dict[str, Any]]] = {
            "exact name": [{"name": n} for n in names],
            "exact alias": [{"name": a} for a in aliases],
            "substring (5 chars)": [{"name": w[1:6]} for w in last_words],
            "short (2 chars)": [{"name": w[:2]} for w in last_words],
            "short, no match": [{"name": "zq"}],
            "no match": [{"name": f"zzq{i}xy"} for i in range(50)],
            "fuzzy (typo)": [{"name": typo(w), "enable_fuzzy": True} for w in last_words],
            "name + topic hint": [
                {"name": n.split(" ")[0], "context_hints": {"topic": "club"}} for n in names
            ],
        }
        # In-process on loopback: no API key needed for the measurement.
        settings = Settings(database_url=db_url, migrate_on_start=False, auth_disabled=True)
        app = create_app(settings)
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:
                await timed(client, cases["exact name"][0], 5)
                print(f"{'query':22} {'median ms':>10} {'p95 ms':>8} {'runs':>5}")
                for label, bodies in cases.items():
                    samples: list[float] = []
                    for i in range(runs):
                        samples += await timed(client, bodies[i % len(bodies)], 1)
                    samples.sort()
                    p95 = samples[min(len(samples) - 1, int(0.95 * len(samples)))]
                    print(
                        f"{label:22} {statistics.median(samples):10.1f} {p95:8.1f} {len(samples):5}"
                    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--entities", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--keep", action="store_true", help="Keep the database for EXPLAIN.")
    args = parser.parse_args()
    asyncio.run(main(args.entities, args.runs, args.keep))
