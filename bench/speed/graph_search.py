"""Graph-boosted search latency at scale: /v1/search with and without `entities`.

Seeds, straight into a database at head (as the owner, in the system scope, so row-level
security lets the seed write for tenant 'default'): E entities, facts anchored on random
entities, episodes, and L links (entity-entity `knows`/`works_at`, entity->episode
`mentions`, random strengths in [0.3, 1]); memories get random unit vectors (the timing, not
the quality, is measured). Then times, one request at a time through HTTP:
search without entities, search with one entity (graph_hops 2), and the floor: the graph SQL
alone (repositories/graph.graph_scores in the tenant's scope).

    engram serve --no-auth --port 8100 &       # a fresh data directory
    python -m bench.speed.graph_search \
        --database-url postgresql+asyncpg://postgres@/engram?host=... \
        --base-url http://127.0.0.1:8100 --links 100000
"""

import argparse
import asyncio
import random
import statistics
import time
import uuid

import httpx
import numpy as np
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, create_async_engine

from app.core.scope import Scope, scope_session
from app.repositories.graph import graph_scores
from bench.common.texts import BUTLERS, NAMES, question, sentence

SYSTEM = "SELECT set_config('engram.system', 'on', true)"
TENANT = "default"


def vectors(rng: np.random.Generator, n: int) -> list[str]:
    """n random unit vectors in pgvector's text form."""
    raw = rng.standard_normal((n, 384)).astype(np.float32)
    raw /= np.linalg.norm(raw, axis=1, keepdims=True)
    return ["[" + ",".join(f"{x:.5f}" for x in row) + "]" for row in raw]


async def seed(
    url: str, *, entities: int, facts: int, episodes: int, links: int, seed_value: int
) -> list[uuid.UUID]:
    """Insert the graph; the entity ids."""
    rng, nrng = random.Random(seed_value), np.random.default_rng(seed_value)
    engine = create_async_engine(url)
    entity_ids = [uuid.uuid4() for _ in range(entities)]
    episode_ids = [uuid.uuid4() for _ in range(episodes)]
    async with engine.begin() as conn:
        await conn.execute(text(SYSTEM))
        await conn.execute(
            text(
                "INSERT INTO entities (id, tenant_id, canonical_name, entity_type) "
                "SELECT unnest(CAST(:ids AS uuid[])), :t, unnest(CAST(:names AS text[])), 'person'"
            ),
            {
                "ids": entity_ids,
                "t": TENANT,
                "names": [
                    f"{rng.choice(NAMES)} {i} {uuid.uuid4().hex[:8]}" for i in range(entities)
                ],
            },
        )
    for start in range(0, facts, 2000):
        n = min(2000, facts - start)
        contents = [sentence(rng) for _ in range(n)]
        async with engine.begin() as conn:
            await conn.execute(text(SYSTEM))
            await conn.execute(
                text("""
                INSERT INTO facts (tenant_id, subject, predicate, subject_key, predicate_key,
                                   content, entity_id, embedding, search_vector)
                SELECT :t, 's', 'p' || i, 's', 'p' || i, c, e, CAST(v AS vector),
                       to_tsvector('english', c)
                FROM unnest(CAST(:contents AS text[]), CAST(:entities AS uuid[]),
                            CAST(:vectors AS text[]), CAST(:idx AS int[])) AS x(c, e, v, i)
            """),
                {
                    "t": TENANT,
                    "contents": contents,
                    "entities": [rng.choice(entity_ids) for _ in range(n)],
                    "vectors": vectors(nrng, n),
                    "idx": list(range(start, start + n)),
                },
            )
    for start in range(0, episodes, 2000):
        ids = episode_ids[start : start + 2000]
        contents = [sentence(rng) for _ in ids]
        async with engine.begin() as conn:
            await conn.execute(text(SYSTEM))
            await conn.execute(
                text("""
                INSERT INTO episodes (id, tenant_id, butler, content, embedding, search_vector)
                SELECT i, :t, b, c, CAST(v AS vector), to_tsvector('english', c)
                FROM unnest(CAST(:ids AS uuid[]), CAST(:butlers AS text[]),
                            CAST(:contents AS text[]), CAST(:vectors AS text[])) AS x(i, b, c, v)
            """),
                {
                    "t": TENANT,
                    "ids": ids,
                    "contents": contents,
                    "butlers": [rng.choice(BUTLERS) for _ in ids],
                    "vectors": vectors(nrng, len(ids)),
                },
            )
    edges: set[tuple[str, uuid.UUID, str, uuid.UUID]] = set()
    while len(edges) < links:
        source = rng.choice(entity_ids)
        if rng.random() < 0.4:
            target = rng.choice(entity_ids)
            if target != source:
                edges.add(("entity", source, "entity", target))
        else:
            edges.add(("entity", source, "episode", rng.choice(episode_ids)))
    rows = list(edges)
    for start in range(0, len(rows), 5000):
        chunk = rows[start : start + 5000]
        async with engine.begin() as conn:
            await conn.execute(text(SYSTEM))
            await conn.execute(
                text("""
                INSERT INTO memory_links (tenant_id, source_type, source_id, target_type,
                                          target_id, relation, strength)
                SELECT :t, st, si, tt, ti,
                       CASE WHEN tt = 'entity' THEN 'knows' ELSE 'mentions' END, s
                FROM unnest(CAST(:st AS text[]), CAST(:si AS uuid[]), CAST(:tt AS text[]),
                            CAST(:ti AS uuid[]), CAST(:s AS float8[])) AS x(st, si, tt, ti, s)
            """),
                {
                    "t": TENANT,
                    "st": [r[0] for r in chunk],
                    "si": [r[1] for r in chunk],
                    "tt": [r[2] for r in chunk],
                    "ti": [r[3] for r in chunk],
                    "s": [round(rng.uniform(0.3, 1.0), 3) for _ in chunk],
                },
            )
    async with engine.begin() as conn:
        await conn.execute(text("ANALYZE"))
    await engine.dispose()
    return entity_ids


def summary(name: str, seconds: list[float]) -> str:
    """median and p95 in ms."""
    ordered = sorted(seconds)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return (
        f"{name:<28} n={len(ordered):>4}  p50 {1000 * statistics.median(ordered):6.1f} ms"
        f"  p95 {1000 * p95:6.1f} ms"
    )


async def measure(args: argparse.Namespace, entity_ids: list[uuid.UUID]) -> None:
    """Time search with and without entities, and the graph SQL alone."""
    rng = random.Random(args.seed + 1)
    picks = [rng.choice(entity_ids) for _ in range(args.queries)]
    questions = [question(rng, i) for i in range(args.queries)]
    plain, boosted, floor, reached = [], [], [], []
    engine = create_async_engine(args.database_url)
    async with httpx.AsyncClient(base_url=args.base_url, timeout=60) as http:
        for entity_id, query in zip(picks, questions, strict=True):
            start = time.perf_counter()
            (await http.post("/v1/search", json={"query": query})).raise_for_status()
            plain.append(time.perf_counter() - start)
            start = time.perf_counter()
            response = await http.post(
                "/v1/search",
                json={"query": query, "entities": [str(entity_id)], "graph_hops": args.hops},
            )
            response.raise_for_status()
            boosted.append(time.perf_counter() - start)
            results = response.json()["results"]
            reached.append(sum(1 for hit in results if hit["graph"]) / max(len(results), 1))
            async with AsyncSession(engine) as session:
                scope_session(session, Scope(tenant_id=TENANT))
                start = time.perf_counter()
                await graph_scores(
                    session,
                    tenant_id=TENANT,
                    roots=[entity_id],
                    types=["episode", "fact", "rule"],
                    hops=args.hops,
                    fanout=50,
                    limit=40,
                )
                floor.append(time.perf_counter() - start)
    await engine.dispose()
    print(summary("search, no entities", plain))
    print(summary(f"search, 1 entity, {args.hops} hops", boosted))
    print(summary("graph SQL alone (floor)", floor))
    print(f"share of hits with a graph path: mean {statistics.mean(reached):.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--database-url", required=True, help="the server's database (owner)")
    parser.add_argument("--base-url", default="http://127.0.0.1:8100")
    parser.add_argument("--links", type=int, default=100_000)
    parser.add_argument("--entities", type=int, default=5_000)
    parser.add_argument("--facts", type=int, default=20_000)
    parser.add_argument("--episodes", type=int, default=20_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--hops", type=int, default=2)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--skip-seed", action="store_true")
    args = parser.parse_args()
    if args.skip_seed:
        engine_ids = asyncio.run(_entity_ids(args.database_url))
    else:
        start = time.perf_counter()
        engine_ids = asyncio.run(
            seed(
                args.database_url,
                entities=args.entities,
                facts=args.facts,
                episodes=args.episodes,
                links=args.links,
                seed_value=args.seed,
            )
        )
        print(
            f"seeded {args.links} links, {args.entities} entities, {args.facts} facts, "
            f"{args.episodes} episodes in {time.perf_counter() - start:.0f} s"
        )
    asyncio.run(measure(args, engine_ids))


async def _entity_ids(url: str) -> list[uuid.UUID]:
    engine = create_async_engine(url)
    async with engine.begin() as conn:
        await conn.execute(text(SYSTEM))
        ids = list(
            (
                await conn.execute(
                    text("SELECT id FROM entities WHERE tenant_id = :t"), {"t": TENANT}
                )
            ).scalars()
        )
    await engine.dispose()
    return ids


if __name__ == "__main__":
    main()
