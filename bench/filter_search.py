"""Filtered search on a large store: quality against exact filtered search, and time beside
its floors, at filters that admit 50%, 5%, 0.5% and 0.05% of the episodes.

The store is seeded by `seed_sql.py`, whose episodes carry the metadata flags `p50`, `p5`,
`p05`, `p005`. For each filter (and none), the same questions one at a time:

* **HTTP**: POST /v1/search through `http.client` on one kept-alive connection (hybrid,
  limit 10, the server's default fusion), timed;
* **floors**, in this process: the query embedding alone (the server's model settings), and
  the SQL alone: what the service runs for that request (the admitted counts of a filtered
  search, then the candidate statement, as the role `engram_app` under row-level security);
* **quality**: the same search run in this process with every filtered type ranked exactly
  (`filter_exact_below` above the store's size): R@10 of the served top 10 against that
  exact top 10.

    engram serve --no-auth --port 8100 &      # over the seeded data directory
    ENGRAM_DATA_DIR=... python bench/filter_search.py \\
        --database-url postgresql+asyncpg://postgres@/engram?host=<data_dir>/pgdata/run \\
        --base-url http://127.0.0.1:8100
"""

import argparse
import asyncio
import random
import sys
import time
from pathlib import Path
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, create_async_engine

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from search_steps import PlainClient, percentile  # noqa: E402
from speed import question  # noqa: E402

from app.config import Settings  # noqa: E402
from app.embedding import get_embedder  # noqa: E402
from app.retrieval import candidates as search_rows  # noqa: E402
from app.retrieval import rerank  # noqa: E402
from app.retrieval.plan import plan_search  # noqa: E402
from app.retrieval.search import search  # noqa: E402
from app.schemas.filters import parse_filter  # noqa: E402
from app.scope import Scope, scope_session  # noqa: E402

TYPES = ["episode", "fact", "rule"]
LIMIT = 10
FILTERS: dict[str, dict[str, Any] | None] = {
    "none": None,
    "50%": {"metadata.p50": True},
    "5%": {"metadata.p5": True},
    "0.5%": {"metadata.p05": True},
    "0.05%": {"metadata.p005": True},
}


async def sql_alone(session: AsyncSession, settings: Settings, filters: search_rows.Filters,
                    vector: Any, query: str) -> float:
    """The statements the service runs for one search (counts, then candidates), timed."""
    retrieval = settings.retrieval
    await session.execute(text("SET LOCAL ROLE engram_app"))
    await search_rows.configure_vector_scan(
        session, ef_search=max(retrieval.hnsw_ef_search, rerank.DEPTH),
        max_scan_tuples=retrieval.hnsw_max_scan_tuples)
    start = time.perf_counter()
    filters = await search_rows.with_exact_types(session, TYPES, filters,
                                                 below=retrieval.filter_exact_below)
    await search_rows.search_candidates(session, types=TYPES, filters=filters, vector=vector,
                                        query=query, limit=max(LIMIT, rerank.DEPTH),
                                        passages=search_rows.IN_FULL)
    seconds = time.perf_counter() - start
    await session.rollback()
    return seconds


async def exact_top(session: AsyncSession, settings: Settings, embedder: Any, query: str,
                    wanted: dict[str, Any] | None, tenant: str) -> list[str]:
    """The top 10 of the same search with every filtered type ranked exactly."""
    exact = settings.retrieval.model_copy(update={"filter_exact_below": 10**9})
    plan = plan_search(exact, query=query, types=TYPES, scope=None, mode="hybrid",
                       limit=LIMIT, min_confidence=0.2,
                       memory_filter=None if wanted is None else parse_filter(wanted))
    await session.execute(text("SET LOCAL ROLE engram_app"))
    hits = await search(session, plan, tenant_id=tenant, embedder=embedder, retrieval=exact)
    ids = [str(hit.row.id) for hit in hits]
    await session.rollback()
    return ids


async def run(args: argparse.Namespace) -> None:
    settings = Settings()
    rng = random.Random(13)
    questions = [question(rng, index) for index in range(args.queries)]
    embedder = get_embedder(settings)
    engine = create_async_engine(args.database_url, pool_size=1)
    plain = PlainClient(args.base_url)
    print(f"{'filter':8s} {'HTTP p50':>9s} {'p95':>7s} {'floor p50':>10s} {'p95':>7s} "
          f"{'x p50':>6s} {'x p95':>6s} {'R@10 vs exact':>14s} {'hits':>5s}")
    async with AsyncSession(engine) as session:
        scope_session(session, Scope(tenant_id=args.tenant))
        for name, wanted in FILTERS.items():
            tree = None if wanted is None else parse_filter(wanted)
            filters = search_rows.Filters(tenant_id=args.tenant, scope=None,
                                          min_confidence=0.2, memory_filter=tree)
            http_s, model_s, sql_s, recalls, counts = [], [], [], [], []
            for round_number in range(2):  # the first round warms caches
                for query in questions:
                    body = {"query": query, "types": TYPES, "limit": LIMIT,
                            **({"filter": wanted} if wanted else {})}
                    start = time.perf_counter()
                    served = plain.post_json("/v1/search", body)
                    seconds = time.perf_counter() - start
                    start = time.perf_counter()
                    vector = await embedder.aembed(query)
                    model_seconds = time.perf_counter() - start
                    statement_seconds = await sql_alone(session, settings, filters, vector,
                                                        query)
                    if not round_number:
                        continue
                    http_s.append(seconds)
                    model_s.append(model_seconds)
                    sql_s.append(statement_seconds)
                    got = [hit["id"] for hit in served["results"]]
                    if args.quality:
                        reference = await exact_top(session, settings, embedder, query,
                                                    wanted, args.tenant)
                        if reference:
                            recalls.append(len(set(got) & set(reference)) / len(reference))
                    counts.append(len(got))
            floors = [percentile(model_s, q) + percentile(sql_s, q) for q in (0.5, 0.95)]
            p50, p95 = percentile(http_s, 0.5), percentile(http_s, 0.95)
            quality = f"{sum(recalls) / len(recalls):14.3f}" if recalls else f"{'-':>14s}"
            print(f"{name:8s} {p50:7.1f}ms {p95:5.1f}ms {floors[0]:8.1f}ms {floors[1]:5.1f}ms "
                  f"{p50 / floors[0]:6.2f} {p95 / floors[1]:6.2f} {quality} "
                  f"{sum(counts) / len(counts):5.1f}", flush=True)
    await engine.dispose()
    embedder.close()
    plain.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", required=True, help="the server's database (owner)")
    parser.add_argument("--base-url", default="http://127.0.0.1:8100")
    parser.add_argument("--tenant", default="default")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--no-quality", dest="quality", action="store_false",
                        help="skip the exact reference (slow at 50%% of 1M)")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
