"""Where a search's time goes: the whole request beside its floors, on data already stored.

Times, for the same questions one at a time: POST /v1/search through HTTP (hybrid, limit
10, the given fusion) with the standard library's `http.client` on one kept-alive connection,
and the same request through `httpx` (which spends a millisecond or more of its own per
request: its figure is the service's plus that client's), each question asked by the two
clients in turns of which goes first; and in this process the query embedding alone (the
server's model settings) and the search statement alone (repositories/search/candidates.
search_candidates: the one SQL statement of both legs over episodes, facts and rules with every
candidate's row, as deep as the fusion reads them), as the service's role `engram_app` under
row-level security in the tenant's scope. Last, each HTTP time over its floors (the model's
plus the statement's, at the same percentile).

    engram serve --no-auth --port 8100 &       # over a data directory holding memories
    ENGRAM_DATA_DIR=... python -m bench.speed.search_steps \
        --database-url postgresql+asyncpg://postgres@/engram?host=<data_dir>/pgdata/run \
        --base-url http://127.0.0.1:8100 --scope locomo-conv-26-plain
"""

import argparse
import asyncio
import http.client
import json
import random
import statistics
import time
from typing import Any
from urllib.parse import urlsplit

import httpx
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, create_async_engine

from app.core.config import Settings
from app.core.scope import Scope, scope_session
from app.embedding import get_embedder
from app.repositories.search import candidates as search_rows
from app.retrieval import rerank
from bench.common.texts import question

TYPES = ["episode", "fact", "rule"]
LIMIT = 10


def percentile(seconds: list[float], q: float) -> float:
    """The `q` quantile of `seconds` (the median at 0.5), in ms."""
    if q == 0.5:
        return statistics.median(seconds) * 1000
    ms = sorted(s * 1000 for s in seconds)
    return ms[max(0, round(q * len(ms)) - 1)]


def summary(name: str, seconds: list[float]) -> str:
    """'name: p50 x ms, p95 y ms (n)'."""
    return (
        f"{name:38s} p50 {percentile(seconds, 0.5):7.1f} ms   "
        f"p95 {percentile(seconds, 0.95):7.1f} ms   (n={len(seconds)})"
    )


class PlainClient:
    """POSTs JSON over one kept-alive HTTP/1.1 connection with `http.client`, which adds
    little of its own to a request's time (the benchmark waits for each answer anyway)."""

    def __init__(self, base_url: str) -> None:
        parts = urlsplit(base_url)
        self._connection = http.client.HTTPConnection(
            parts.hostname or "127.0.0.1", parts.port, timeout=60
        )

    def post(self, path: str, payload: dict[str, object]) -> float:
        """Seconds from sending the request to having read the whole answer (2xx only)."""
        return self.exchange(path, payload)[0]

    def post_json(self, path: str, payload: dict[str, object]) -> Any:
        """The parsed answer (2xx only)."""
        return json.loads(self.exchange(path, payload)[1])

    def exchange(self, path: str, payload: dict[str, object]) -> tuple[float, bytes]:
        """Seconds from sending the request to having read the whole answer, and the answer."""
        data = json.dumps(payload).encode()
        start = time.perf_counter()
        self._connection.request(
            "POST", path, body=data, headers={"Content-Type": "application/json"}
        )
        response = self._connection.getresponse()
        answer = response.read()
        seconds = time.perf_counter() - start
        if response.status >= 300:
            raise RuntimeError(f"POST {path}: {response.status} {answer[:200]!r}")
        return seconds, answer

    def close(self) -> None:
        """Close the connection."""
        self._connection.close()


async def run(args: argparse.Namespace) -> None:
    """Warm up, then time every step over the same questions."""
    rng = random.Random(11)
    questions = [question(rng, index) for index in range(args.queries)]
    embedder = get_embedder(Settings())
    engine = create_async_engine(args.database_url, pool_size=1)
    filters = search_rows.Filters(tenant_id=args.tenant, scope=args.scope, min_confidence=0.2)
    body = {
        "types": TYPES,
        "mode": "hybrid",
        "limit": LIMIT,
        "scope": args.scope,
        "fusion": args.fusion,
    }
    # Learned fusion reads each list rerank.DEPTH deep; its statement is timed at that depth.
    depth = max(LIMIT, rerank.DEPTH) if args.fusion == "learned" else LIMIT
    steps: dict[str, list[float]] = {
        "search through HTTP": [],
        "same, through httpx": [],
        "model alone (one query)": [],
        "search statement SQL alone": [],
    }
    plain = PlainClient(args.base_url)
    async with (
        httpx.AsyncClient(base_url=args.base_url, timeout=60) as http,
        AsyncSession(engine) as session,
    ):
        scope_session(session, Scope(tenant_id=args.tenant))

        async def through_httpx(payload: dict[str, object]) -> float:
            start = time.perf_counter()
            response = await http.post("/v1/search", json=payload)
            seconds = time.perf_counter() - start
            response.raise_for_status()
            return seconds

        for round_number in range(2):  # the first round only warms caches
            for index, query in enumerate(questions):
                payload = {"query": query, **body}
                if index % 2:
                    http_seconds = plain.post("/v1/search", payload)
                    httpx_seconds = await through_httpx(payload)
                else:
                    httpx_seconds = await through_httpx(payload)
                    http_seconds = plain.post("/v1/search", payload)
                start = time.perf_counter()
                vector = await embedder.aembed(query)
                model_seconds = time.perf_counter() - start
                await session.execute(text("SET LOCAL ROLE engram_app"))
                await search_rows.configure_vector_scan(
                    session, ef_search=max(40, depth), max_scan_tuples=20_000
                )
                start = time.perf_counter()
                await search_rows.search_candidates(
                    session,
                    types=TYPES,
                    filters=filters,
                    vector=vector,
                    query=query,
                    limit=depth,
                    passages=search_rows.IN_FULL
                    if args.fusion == "learned"
                    else search_rows.AS_PARTS,
                )
                sql_seconds = time.perf_counter() - start
                await session.rollback()
                if round_number:
                    for name, seconds in zip(
                        steps,
                        (http_seconds, httpx_seconds, model_seconds, sql_seconds),
                        strict=True,
                    ):
                        steps[name].append(seconds)
    await engine.dispose()
    embedder.close()
    plain.close()
    for name, seconds in steps.items():
        print(summary(name, seconds))
    floors = [
        percentile(steps["model alone (one query)"], q)
        + percentile(steps["search statement SQL alone"], q)
        for q in (0.5, 0.95)
    ]
    for name in ("search through HTTP", "same, through httpx"):
        p50, p95 = (
            percentile(steps[name], q) / floor for q, floor in zip((0.5, 0.95), floors, strict=True)
        )
        print(f"{name + ' over its floors':38s} p50 {p50:7.2f} x    p95 {p95:7.2f} x")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--database-url", required=True, help="the server's database (owner)")
    parser.add_argument("--base-url", default="http://127.0.0.1:8100")
    parser.add_argument("--tenant", default="default")
    parser.add_argument("--scope", default=None, help="a butler to search (default: all)")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument(
        "--fusion",
        choices=("learned", "rrf"),
        default="learned",
        help="the fusion searched with; the SQL floor is timed at its depth",
    )
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
