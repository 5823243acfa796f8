"""Filtered search on a large store: quality against exact filtered search, and time beside
its floors, at filters that admit 50%, 5%, 0.5% and 0.05% of the episodes.

The store is seeded by `seed_sql.py`, whose episodes carry the metadata flags `p50`, `p5`,
`p05`, `p005`. For each filter (and none), the same questions one at a time:

* **HTTP**: POST /v1/search through `http.client` on one kept-alive connection (hybrid,
  limit 10, the server's default fusion), timed;
* **floors**, in this process: the query embedding alone (the server's model settings), and
  the SQL alone: what the service runs for that request (the admitted counts of a filtered
  search, then the candidate statement, as the role `engram_app` under row-level security);
* **quality**: each question names two parts of the seeded sentences (a name and a time,
  ...); an episode's gain is how many of them it holds. Quality@10 is the gain of the top 10
  over the best gain any 10 admitted episodes reach (counted in SQL over every admitted
  episode). It is taken for the served top 10 and for the same search run in this process
  with every type ranked exactly (exact vector order, every admitted memory holding a query
  word scored): the target is served >= 0.98 of exact. Many episodes tie (same parts, same
  length), so the overlap of the two top 10s (also printed) is not a quality measure.

    # over the seeded data directory, with the background jobs off: the seeded episodes are
    # consolidated, and cleanup would delete those above the tenant's episode capacity
    ENGRAM_JOBS__WORKER_ENABLED=false ENGRAM_JOBS__SCHEDULER_ENABLED=false \
        engram serve --no-auth --port 8100 &
    ENGRAM_DATA_DIR=... python -m bench.speed.filter_search \\
        --database-url postgresql+asyncpg://postgres@/engram?host=<data_dir>/pgdata/run \\
        --base-url http://127.0.0.1:8100
"""

import argparse
import asyncio
import json
import random
import time
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, create_async_engine

from app.core.config import Settings
from app.core.scope import Scope, scope_session
from app.embedding import get_embedder
from app.repositories.search import candidates as search_rows
from app.retrieval import rerank
from app.retrieval.plan import plan_search
from app.retrieval.search import search
from app.retrieval.searcher import Searcher
from app.schemas.filters import parse_filter
from bench.common.texts import question_with_parts
from bench.speed.search_steps import PlainClient, percentile

TYPES = ["episode", "fact", "rule"]
LIMIT = 10
FILTERS: dict[str, dict[str, Any] | None] = {
    "none": None,
    "50%": {"metadata.p50": True},
    "5%": {"metadata.p5": True},
    "0.5%": {"metadata.p05": True},
    "0.05%": {"metadata.p005": True},
}


async def sql_alone(
    session: AsyncSession, settings: Settings, filters: search_rows.Filters, vector: Any, query: str
) -> float:
    """The statements the service runs for one search (counts, then candidates), timed."""
    retrieval = settings.retrieval
    await session.execute(text("SET LOCAL ROLE engram_app"))
    await search_rows.configure_vector_scan(
        session,
        ef_search=max(retrieval.hnsw_ef_search, rerank.DEPTH),
        max_scan_tuples=retrieval.hnsw_max_scan_tuples,
    )
    start = time.perf_counter()
    filters = await search_rows.with_exact_types(
        session, TYPES, filters, below=retrieval.filter_exact_below
    )
    await search_rows.search_candidates(
        session,
        types=TYPES,
        filters=filters,
        vector=vector,
        query=query,
        limit=max(LIMIT, rerank.DEPTH),
        passages=search_rows.IN_FULL,
    )
    seconds = time.perf_counter() - start
    await session.rollback()
    return seconds


async def exact_top(
    session: AsyncSession,
    settings: Settings,
    embedder: Any,
    query: str,
    wanted: dict[str, Any] | None,
    tenant: str,
) -> list[tuple[str, str]]:
    """(id, content) of the top 10 of the same search with every type ranked exactly."""
    exact = settings.retrieval.model_copy(update={"filter_exact_below": 10**9})
    # Without a filter every type is ranked exactly too: a filter admitting everything.
    plan = plan_search(
        exact,
        query=query,
        types=TYPES,
        scope=None,
        mode="hybrid",
        limit=LIMIT,
        min_confidence=0.2,
        memory_filter=parse_filter(wanted or {"created_at": {"$exists": True}}),
    )
    await session.execute(text("SET LOCAL ROLE engram_app"))
    hits = await search(session, plan, searcher=Searcher(tenant, embedder, exact))
    found = [(str(hit.row.id), hit.row.content) for hit in hits]
    await session.rollback()
    return found


def gain(content: str, parts: list[str]) -> int:
    """How many of the question's parts an episode holds."""
    return sum(part in content for part in parts)


async def best_gain(
    session: AsyncSession, parts: list[str], wanted: dict[str, Any] | None, tenant: str
) -> int:
    """The largest total gain of any 10 episodes the filter admits (a scan of all of them)."""
    held = " + ".join(f"(position(:part{i} in content) > 0)::int" for i in range(len(parts)))
    flag = "" if wanted is None else "AND metadata @> CAST(:flag AS jsonb)"
    statement = text(
        f"SELECT coalesce(sum(g), 0) FROM (SELECT {held} AS g FROM episodes "
        f"WHERE tenant_id = :tenant AND embedding IS NOT NULL {flag} "
        f"ORDER BY g DESC LIMIT {LIMIT}) AS top"
    )
    params: dict[str, Any] = {f"part{i}": part for i, part in enumerate(parts)}
    if wanted is not None:
        params["flag"] = json.dumps({key.split(".", 1)[1]: value for key, value in wanted.items()})
    return int((await session.execute(statement, {**params, "tenant": tenant})).scalar_one())


async def run(args: argparse.Namespace) -> None:
    settings = Settings()
    rng = random.Random(13)
    questions = [question_with_parts(rng, index) for index in range(args.queries)]
    embedder = get_embedder(settings)
    engine = create_async_engine(args.database_url, pool_size=1)
    print(
        f"{'filter':8s} {'HTTP p50':>9s} {'p95':>7s} {'floor p50':>10s} {'p95':>7s} "
        f"{'x p50':>6s} {'x p95':>6s} {'Q@10':>6s} {'exact':>6s} {'ratio':>6s} "
        f"{'overlap':>8s} {'hits':>5s}"
    )
    async with AsyncSession(engine) as session:
        scope_session(session, Scope(tenant_id=args.tenant))
        for name, wanted in FILTERS.items():
            if args.filters and name not in args.filters:
                continue
            tree = None if wanted is None else parse_filter(wanted)
            filters = search_rows.Filters(
                tenant_id=args.tenant, scope=None, min_confidence=0.2, memory_filter=tree
            )
            http_s, model_s, sql_s, overlaps = [], [], [], []
            answers: list[tuple[str, list[str], list[dict[str, Any]]]] = []
            served_gain = exact_gain = ideal_gain = 0
            plain = PlainClient(args.base_url)  # new per filter: the quality runs idle it
            for round_number in range(2):  # the first round warms caches
                for query, parts in questions:
                    body = {
                        "query": query,
                        "types": TYPES,
                        "limit": LIMIT,
                        **({"filter": wanted} if wanted else {}),
                    }
                    start = time.perf_counter()
                    served = plain.post_json("/v1/search", body)
                    seconds = time.perf_counter() - start
                    start = time.perf_counter()
                    vector = await embedder.aembed(query)
                    model_seconds = time.perf_counter() - start
                    statement_seconds = await sql_alone(session, settings, filters, vector, query)
                    if not round_number:
                        continue
                    http_s.append(seconds)
                    model_s.append(model_seconds)
                    sql_s.append(statement_seconds)
                    answers.append((query, parts, served["results"]))
            plain.close()
            # Quality after the timed requests, which then run back to back.
            for query, parts, results in answers if args.quality else []:
                reference = await exact_top(session, settings, embedder, query, wanted, args.tenant)
                if reference:
                    overlaps.append(
                        len({hit["id"] for hit in results} & {i for i, _ in reference})
                        / len(reference)
                    )
                served_gain += sum(gain(hit["content"], parts) for hit in results)
                exact_gain += sum(gain(content, parts) for _, content in reference)
                ideal_gain += await best_gain(session, parts, wanted, args.tenant)
            floors = [percentile(model_s, q) + percentile(sql_s, q) for q in (0.5, 0.95)]
            p50, p95 = percentile(http_s, 0.5), percentile(http_s, 0.95)
            quality = (
                f"{served_gain / ideal_gain:6.3f} {exact_gain / ideal_gain:6.3f} "
                f"{served_gain / exact_gain:6.3f} {sum(overlaps) / len(overlaps):8.3f}"
                if overlaps
                else f"{'-':>6s} {'-':>6s} {'-':>6s} {'-':>8s}"
            )
            print(
                f"{name:8s} {p50:7.1f}ms {p95:5.1f}ms {floors[0]:8.1f}ms {floors[1]:5.1f}ms "
                f"{p50 / floors[0]:6.2f} {p95 / floors[1]:6.2f} {quality} "
                f"{sum(len(hits) for *_, hits in answers) / len(answers):5.1f}",
                flush=True,
            )
    await engine.dispose()
    embedder.close()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--database-url", required=True, help="the server's database (owner)")
    parser.add_argument("--base-url", default="http://127.0.0.1:8100")
    parser.add_argument("--tenant", default="default")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument(
        "--filters",
        nargs="+",
        choices=list(FILTERS),
        default=None,
        help="only these filters (default: all)",
    )
    parser.add_argument(
        "--no-quality",
        dest="quality",
        action="store_false",
        help="skip the exact reference (slow at 50%% of 1M)",
    )
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
