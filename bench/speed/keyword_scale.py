"""Keyword-leg SQL time at scale, old (OR-ed ts_rank_cd) against new (BM25 postings).

Seeds N episodes of common/texts.py's generated sentences straight into a database at head (plain
INSERTs of 500 rows, so the mem_010 triggers run as they do for the batch endpoint; no
embeddings: only the keyword leg is measured), then times both keyword legs on common/texts.py's
questions, each alone in its statement, as the search endpoint builds them (limit 10, a
butler scope on two thirds of them). No HTTP, no model: SQL time only.

    python -m bench.speed.keyword_scale --database-url postgresql+asyncpg://... --n 100000
"""

import argparse
import asyncio
import random
import statistics
import time
from typing import Any

from sqlalchemy import Text, func, literal, select, text
from sqlalchemy.ext.asyncio import create_async_engine

from app.models import Episode
from app.repositories.search.candidates import Filters, or_tsquery, visibility_filters
from app.repositories.search.keyword import bm25_leg
from bench.common.texts import BUTLERS, question, sentence

INSERT = text("""
    INSERT INTO episodes (tenant_id, butler, content, search_vector)
    SELECT 'default', b, c, to_tsvector('english', c)
    FROM unnest(CAST(:butlers AS text[]), CAST(:contents AS text[])) AS t(b, c)
""")


def ts_rank_cd_leg(filters: Filters, query: str, limit: int) -> Any:
    """The keyword leg before mem_010: every OR match ranked by ts_rank_cd."""
    tsquery = or_tsquery(query)
    rank = func.ts_rank_cd(Episode.search_vector, tsquery)
    return (
        select(literal("episode", Text).label("memory_type"), Episode.id, (-rank).label("score"))
        .where(*visibility_filters("episode", filters), Episode.search_vector.op("@@")(tsquery))
        .order_by(rank.desc())
        .limit(limit)
    )


async def main(args: argparse.Namespace) -> None:
    engine = create_async_engine(args.database_url)
    rng = random.Random(7)
    if args.n:
        start = time.perf_counter()
        for offset in range(0, args.n, 500):
            size = min(500, args.n - offset)
            async with engine.begin() as conn:
                await conn.execute(
                    INSERT,
                    {
                        "butlers": [rng.choice(BUTLERS) for _ in range(size)],
                        "contents": [sentence(rng) for _ in range(size)],
                    },
                )
        print(
            f"seeded {args.n} episodes in {time.perf_counter() - start:.0f}s "
            f"({args.n / (time.perf_counter() - start):.0f}/s, with the triggers)"
        )
        async with engine.begin() as conn:
            await conn.execute(text("ANALYZE"))
    async with engine.connect() as conn:
        count = (await conn.execute(text("SELECT count(*) FROM episodes"))).scalar()
        print(f"{count} episodes")
        for name in ("ts_rank_cd", "bm25"):
            timings = []
            for index in range(args.queries + 10):
                query = question(rng, index)
                scope = rng.choice(BUTLERS) if index % 3 else None
                filters = Filters(tenant_id="default", scope=scope, min_confidence=0.0)
                leg = (
                    ts_rank_cd_leg(filters, query, 10)
                    if name == "ts_rank_cd"
                    else bm25_leg(
                        "episode",
                        tenant_id="default",
                        scope=scope,
                        scope_is_global=False,
                        visibility=visibility_filters("episode", filters),
                        query=query,
                        limit=10,
                    )
                )
                begin = time.perf_counter()
                await conn.execute(leg)
                if index >= 10:  # warm-up
                    timings.append(1000 * (time.perf_counter() - begin))
            timings.sort()
            print(
                f"{name:<10} keyword leg: median {statistics.median(timings):.1f} ms, "
                f"p95 {timings[int(0.95 * (len(timings) - 1))]:.1f} ms "
                f"({len(timings)} queries)"
            )
    await engine.dispose()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--n", type=int, default=0, help="episodes to seed (0: none)")
    parser.add_argument("--queries", type=int, default=200)
    asyncio.run(main(parser.parse_args()))
