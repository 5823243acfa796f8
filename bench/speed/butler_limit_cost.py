"""What the restrictive butler policies (mem_026) cost a search: the search statement with
and without them, for an unlimited key and for a key limited to one butler.

Seeds, straight into a database at head (as the owner, in the system scope): E episodes over
eight butlers and F facts over those scopes and 'global', with random unit vectors (timing,
not quality) and their keyword postings (the triggers fill them). Then times, for the same
random queries in turns, repositories/search/candidates.search_candidates (the one
statement of a hybrid search over episodes, facts and rules, 30 deep as the learned fusion
reads it) as the service's role `engram_app` in the tenant's scope:

* unlimited, policies in place (what an unlimited key runs now);
* unlimited, policies dropped inside the timed transaction and rolled back (what it ran
  before mem_026);
* limited to one butler, policies in place.

    python -m bench.speed.butler_limit_cost \
        --database-url postgresql+asyncpg://postgres@/engram?host=... --episodes 50000
"""

import argparse
import asyncio
import random
import statistics
import time

import numpy as np
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, create_async_engine

from app.core.rls import BUTLER_LIMITS, drop_butler_policy_statements
from app.core.scope import Scope, scope_session
from app.embedding.vectors import EmbeddingVector
from app.repositories.search import candidates as search_rows
from app.retrieval import rerank
from bench.common.texts import BUTLERS, sentence

SYSTEM = "SELECT set_config('engram.system', 'on', true)"
TENANT = "bench-butlers"
TYPES = ["episode", "fact", "rule"]


def vectors(rng: np.random.Generator, n: int) -> np.ndarray:
    """n random unit vectors."""
    raw = rng.standard_normal((n, 384)).astype(np.float32)
    return raw / np.linalg.norm(raw, axis=1, keepdims=True)


def as_text(rows: np.ndarray) -> list[str]:
    return ["[" + ",".join(f"{x:.5f}" for x in row) + "]" for row in rows]


async def seed(url: str, *, episodes: int, facts: int, seed_value: int) -> None:
    """Insert the tenant's episodes and facts (nothing when it already has episodes)."""
    rng, nrng = random.Random(seed_value), np.random.default_rng(seed_value)
    engine = create_async_engine(url)
    async with engine.begin() as conn:
        await conn.execute(text(SYSTEM))
        have = (
            await conn.execute(
                text("SELECT count(*) FROM episodes WHERE tenant_id = :t"), {"t": TENANT}
            )
        ).scalar_one()
    if have:
        await engine.dispose()
        return
    for start in range(0, episodes, 2000):
        n = min(2000, episodes - start)
        contents = [sentence(rng) for _ in range(n)]
        async with engine.begin() as conn:
            await conn.execute(text(SYSTEM))
            await conn.execute(
                text("""
                INSERT INTO episodes (tenant_id, butler, content, embedding, search_vector)
                SELECT :t, b, c, CAST(v AS vector), to_tsvector('english', c)
                FROM unnest(CAST(:butlers AS text[]), CAST(:contents AS text[]),
                            CAST(:vectors AS text[])) AS x(b, c, v)
            """),
                {
                    "t": TENANT,
                    "contents": contents,
                    "butlers": [rng.choice(BUTLERS) for _ in range(n)],
                    "vectors": as_text(vectors(nrng, n)),
                },
            )
    scopes = [*BUTLERS, "global"]
    for start in range(0, facts, 2000):
        n = min(2000, facts - start)
        contents = [sentence(rng) for _ in range(n)]
        async with engine.begin() as conn:
            await conn.execute(text(SYSTEM))
            await conn.execute(
                text("""
                INSERT INTO facts (tenant_id, subject, predicate, subject_key, predicate_key,
                                   content, scope, embedding, search_vector)
                SELECT :t, 's', 'p' || i, 's', 'p' || i, c, s, CAST(v AS vector),
                       to_tsvector('english', c)
                FROM unnest(CAST(:contents AS text[]), CAST(:scopes AS text[]),
                            CAST(:vectors AS text[]), CAST(:idx AS int[])) AS x(c, s, v, i)
            """),
                {
                    "t": TENANT,
                    "contents": contents,
                    "scopes": [rng.choice(scopes) for _ in range(n)],
                    "vectors": as_text(vectors(nrng, n)),
                    "idx": list(range(start, start + n)),
                },
            )
    async with engine.begin() as conn:
        await conn.execute(text("ANALYZE"))
    await engine.dispose()


async def timed_search(
    session: AsyncSession, scope: Scope, *, drop: bool, vector: EmbeddingVector, query: str
) -> float:
    """Seconds of one search statement in `scope` (policies dropped first when `drop`)."""
    scope_session(session, scope)
    try:
        if drop:
            for table in BUTLER_LIMITS:
                for statement in drop_butler_policy_statements(table):
                    await session.execute(text(statement))
        await session.execute(text("SET LOCAL ROLE engram_app"))
        await search_rows.configure_vector_scan(session, ef_search=40, max_scan_tuples=20_000)
        filters = search_rows.Filters(tenant_id=TENANT, scope=None, min_confidence=0.2)
        start = time.perf_counter()
        await search_rows.search_candidates(
            session,
            types=TYPES,
            filters=filters,
            vector=vector,
            query=query,
            limit=rerank.DEPTH,
            passages=search_rows.IN_FULL,
        )
        return time.perf_counter() - start
    finally:
        await session.rollback()


async def run(args: argparse.Namespace) -> None:
    """Seed, warm up, then time the three variants in turns over the same queries."""
    await seed(args.database_url, episodes=args.episodes, facts=args.facts, seed_value=5)
    rng, nrng = random.Random(7), np.random.default_rng(7)
    queries = [(vectors(nrng, 1)[0], sentence(rng)) for _ in range(args.queries)]
    variants = {
        "unlimited, policies in place": (Scope(tenant_id=TENANT), False),
        "unlimited, policies dropped (before)": (Scope(tenant_id=TENANT), True),
        f"limited to {BUTLERS[0]}": (
            Scope(
                tenant_id=TENANT,
                butlers=(BUTLERS[0],),
                key_id="00000000-0000-4000-8000-000000000000",
            ),
            False,
        ),
    }
    times: dict[str, list[float]] = {name: [] for name in variants}
    engine = create_async_engine(args.database_url, pool_size=1)
    async with AsyncSession(engine) as session:
        for round_number in range(2):  # the first round only warms caches
            for index, (vector, query) in enumerate(queries):
                order = list(variants)
                order = order[index % 3 :] + order[: index % 3]
                for name in order:
                    scope, drop = variants[name]
                    seconds = await timed_search(
                        session, scope, drop=drop, vector=vector, query=query
                    )
                    if round_number:
                        times[name].append(seconds)
    await engine.dispose()
    print(
        f"tenant {TENANT}: {args.episodes} episodes, {args.facts} facts, "
        f"{len(BUTLERS)} butlers; {args.queries} queries"
    )
    for name, seconds in times.items():
        ms = sorted(s * 1000 for s in seconds)
        print(
            f"{name:40s} p50 {statistics.median(ms):7.2f} ms   "
            f"p95 {ms[max(0, round(0.95 * len(ms)) - 1)]:7.2f} ms   (n={len(ms)})"
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--database-url", required=True, help="a database at head (owner)")
    parser.add_argument("--episodes", type=int, default=20_000)
    parser.add_argument("--facts", type=int, default=5_000)
    parser.add_argument("--queries", type=int, default=100)
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
