"""Keyword-leg SQL against a live Engram database: time, and agreement with exact BM25.

For each question it runs the BM25 leg as the search endpoint builds it (per-term top
postings, then exact rescoring), times the statement, and compares its top 10 with exact
BM25 over every matching posting (same formula, same statistics), which is the slow
reference the pruning must agree with.

    python -m bench.speed.keyword_sql --database-url postgresql+asyncpg://... \
        --questions questions.jsonl

Each line of the questions file is {"query": ..., "scope": ...}. Prints median / p95 of the
leg's SQL time and the mean overlap of its top 10 with the exact top 10.
"""

import argparse
import asyncio
import json
import statistics
import time
from pathlib import Path

from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from app.repositories.search.candidates import Filters, visibility_filters
from app.repositories.search.keyword import bm25_leg

EXACT = text("""
    WITH corpus AS (SELECT doc_count::float8 AS n, total_len::float8 / greatest(doc_count, 1)
                    AS avgdl FROM keyword_corpus WHERE tenant_id = :tenant),
    terms AS (SELECT t.term, ln(1 + (c.n - t.doc_freq + 0.5) / (t.doc_freq + 0.5)) AS idf,
                     c.avgdl
              FROM keyword_terms t, corpus c
              WHERE t.tenant_id = :tenant
                AND t.term = ANY(tsvector_to_array(to_tsvector('english', :query))))
    SELECT p.memory_id, sum(t.idf * engram_bm25_tf(p.tf, p.doc_len, t.avgdl)) AS score
    FROM keyword_postings p JOIN terms t ON t.term = p.term
    WHERE p.tenant_id = :tenant AND p.memory_type = 'episode' AND p.scope = :scope
    GROUP BY p.memory_id ORDER BY score DESC, p.memory_id LIMIT :limit
""")


async def main(args: argparse.Namespace) -> None:
    engine = create_async_engine(args.database_url)
    questions = [json.loads(line) for line in Path(args.questions).read_text().splitlines()]
    timings, overlaps = [], []
    async with engine.connect() as conn:
        for q in questions:
            filters = Filters(tenant_id=args.tenant, scope=q["scope"], min_confidence=0.0)
            leg = bm25_leg(
                "episode",
                tenant_id=args.tenant,
                scope=q["scope"],
                scope_is_global=False,
                visibility=visibility_filters("episode", filters),
                query=q["query"],
                limit=args.limit,
            )
            start = time.perf_counter()
            rows = (await conn.execute(leg)).all()
            timings.append(1000 * (time.perf_counter() - start))
            exact = (
                await conn.execute(
                    EXACT,
                    {
                        "tenant": args.tenant,
                        "scope": q["scope"],
                        "query": q["query"],
                        "limit": args.limit,
                    },
                )
            ).all()
            if exact:
                overlaps.append(
                    len({r.id for r in rows} & {r.memory_id for r in exact}) / len(exact)
                )
    await engine.dispose()
    timings.sort()
    print(
        f"{len(timings)} queries: median {statistics.median(timings):.1f} ms, "
        f"p95 {timings[int(0.95 * (len(timings) - 1))]:.1f} ms; "
        f"top-{args.limit} overlap with exact BM25 {statistics.mean(overlaps):.3f}"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--questions", required=True)
    parser.add_argument("--tenant", default="default")
    parser.add_argument("--limit", type=int, default=10)
    asyncio.run(main(parser.parse_args()))
