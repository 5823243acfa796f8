"""HNSW against IVFFlat on the same vectors: recall@10 against exact search, and query time.

Engram indexes every embedding with HNSW (`vector_cosine_ops`, pgvector's defaults m = 16,
ef_construction = 64; searches run with `hnsw.ef_search` = 40 or the search's depth). The
usual layout is IVFFlat with lists = 20. This puts N MiniLM vectors of real text (distinct
sentences of LongMemEval_S turns, embedded by the service's model) in one table, builds each
index in turn and runs the same queries (LongMemEval questions) through it as the service
does (`ORDER BY embedding <=> q LIMIT 10`). Recall@10 is measured against exact search
(numpy over every vector), so it does not depend on the machine's load; the times do.

Prints one table: index, build time, size, query setting, recall@10, query median / p95.

    python -m bench.speed.vector_index --n 50000 --cache /tmp/vectors-50k.npz
"""

import argparse
import asyncio
import gzip
import json
import re
import statistics
import tempfile
import time
from pathlib import Path

import asyncpg
import numpy as np

from app.embedding import Embedder
from app.postgres.embedded_pg import release_server, server_for

K = 10
DATA = Path("/work/shared/data/longmemeval")
FILES = ("longmemeval_s_dev.json.gz", "longmemeval_s_dev2.json.gz")
# Sentences, not whole turns: the model's time grows with the tokens, and 50,000 long turns
# take hours on a small shared machine. The index sees the same kind of vectors either way.
MIN_CHARS, MAX_CHARS = 20, 300
SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def corpus(n: int, queries: int) -> tuple[list[str], list[str]]:
    """Up to `n` distinct sentences of turns and `queries` distinct questions of the
    LongMemEval files."""
    turns: dict[str, None] = {}
    questions: dict[str, None] = {}
    for name in FILES:
        with gzip.open(DATA / name, "rt") as handle:
            for item in json.load(handle):
                questions.setdefault(item["question"])
                for session in item["haystack_sessions"]:
                    for turn in session:
                        for sentence in SENTENCE_END.split(turn["content"]):
                            if MIN_CHARS <= len(sentence) <= MAX_CHARS:
                                turns.setdefault(sentence)
    texts = list(turns)[:n]
    if len(texts) < n:
        print(f"only {len(texts)} distinct sentences in the data")
    return texts, list(questions)[:queries]


def vectors(args: argparse.Namespace) -> tuple[np.ndarray, np.ndarray]:
    """The corpus' and the questions' unit vectors, from the cache file when it has them."""
    if args.cache and args.cache.is_file():
        saved = np.load(args.cache)
        return saved["rows"], saved["queries"]
    texts, questions = corpus(args.n, args.queries)
    model = Embedder().load()
    start = time.perf_counter()
    parts = []
    for i in range(0, len(texts), 32):
        parts.append(model.encode(texts[i : i + 32]))
        if (i + 32) % 5024 == 0:
            print(f"embedded {i + 32} in {time.perf_counter() - start:.0f}s", flush=True)
    rows = np.vstack(parts)
    print(f"embedded {len(texts)} sentences in {time.perf_counter() - start:.0f}s")
    queries = model.encode(questions)
    if args.cache:
        np.savez(args.cache, rows=rows.astype(np.float32), queries=queries.astype(np.float32))
    return rows.astype(np.float32), queries.astype(np.float32)


def literal(vector: np.ndarray) -> str:
    """A vector as pgvector's text input."""
    return "[" + ",".join(f"{x:.7g}" for x in vector) + "]"


async def load(conn: asyncpg.Connection, rows: np.ndarray) -> None:
    """The table `items (id, embedding)` holding `rows`."""
    await conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    await conn.execute("DROP TABLE IF EXISTS items")
    await conn.execute("CREATE TABLE items (id int PRIMARY KEY, embedding vector(384))")
    for start in range(0, len(rows), 2000):
        chunk = rows[start : start + 2000]
        await conn.execute(
            "INSERT INTO items SELECT * FROM unnest($1::int[], $2::text[]::vector[])",
            list(range(start, start + len(chunk))),
            [literal(v) for v in chunk],
        )
    await conn.execute("VACUUM ANALYZE items")


async def timed_queries(
    conn: asyncpg.Connection, queries: np.ndarray, settings: dict[str, str]
) -> tuple[list[list[int]], list[float]]:
    """Each query's top ids through the index, and its time in ms (after 20 warm-ups)."""
    for name, value in settings.items():
        await conn.execute(f"SET {name} = {value}")
    statement = await conn.prepare(
        "SELECT id FROM items ORDER BY embedding <=> $1::text::vector LIMIT 10"
    )
    texts = [literal(q) for q in queries]
    for text in texts[:20]:
        await statement.fetch(text)
    found, times = [], []
    for text in texts:
        start = time.perf_counter()
        result = await statement.fetch(text)
        times.append((time.perf_counter() - start) * 1000)
        found.append([row["id"] for row in result])
    for name in settings:
        await conn.execute(f"RESET {name}")
    return found, times


def recall(found: list[list[int]], exact: np.ndarray) -> float:
    """Mean share of the exact top 10 that the index returned."""
    return statistics.fmean(
        len(set(ids) & set(truth.tolist())) / K for ids, truth in zip(found, exact, strict=True)
    )


async def run(args: argparse.Namespace, rows: np.ndarray, queries: np.ndarray, url: str) -> None:
    exact = np.argsort(-(queries @ rows.T), axis=1)[:, :K]
    conn = await asyncpg.connect(url)
    try:
        await conn.execute("SET maintenance_work_mem = '512MB'")
        await conn.execute("SET max_parallel_maintenance_workers = 0")
        await load(conn, rows)
        print(f"{len(rows)} vectors, {len(queries)} queries, recall@{K} against exact search")
        print("| index | build s | size MB | query settings | recall@10 | median / p95 ms |")
        print("|---|---|---|---|---|---|")
        _, times = await timed_queries(conn, queries[:100], {"enable_indexscan": "off"})
        print(
            f"| none (exact scan) | - | - | - | 1.000 | "
            f"{statistics.median(times):.1f} / {np.percentile(times, 95):.1f} |",
            flush=True,
        )
        lists_big = max(20, len(rows) // 1000)
        plans = [
            (
                "hnsw (m=16, ef_construction=64)",
                "USING hnsw (embedding vector_cosine_ops)",
                [("hnsw.ef_search", "40"), ("hnsw.ef_search", "100")],
            ),
            (
                "ivfflat (lists=20)",
                "USING ivfflat (embedding vector_cosine_ops) WITH (lists = 20)",
                [("ivfflat.probes", "1"), ("ivfflat.probes", "4")],
            ),
            (
                f"ivfflat (lists={lists_big})",
                f"USING ivfflat (embedding vector_cosine_ops) WITH (lists = {lists_big})",
                [("ivfflat.probes", "1"), ("ivfflat.probes", str(max(1, int(lists_big**0.5))))],
            ),
        ]
        for label, using, settings in plans:
            start = time.perf_counter()
            await conn.execute(f"CREATE INDEX items_embedding ON items {using}")
            built = time.perf_counter() - start
            size = await conn.fetchval("SELECT pg_relation_size('items_embedding')")
            for name, value in settings:
                found, times = await timed_queries(conn, queries, {name: value})
                print(
                    f"| {label} | {built:.0f} | {size / 2**20:.0f} | {name} = {value} | "
                    f"{recall(found, exact):.3f} | {statistics.median(times):.1f} / "
                    f"{np.percentile(times, 95):.1f} |",
                    flush=True,
                )
            await conn.execute("DROP INDEX items_embedding")
    finally:
        await conn.close()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=50_000, help="vectors in the table")
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--cache", type=Path, help="an .npz file to keep the vectors in")
    parser.add_argument("--database-url", help="postgresql://... (else an embedded server)")
    args = parser.parse_args()
    rows, queries = vectors(args)
    if args.database_url:
        asyncio.run(run(args, rows, queries, args.database_url))
        return
    with tempfile.TemporaryDirectory() as tmp:
        pgdata = Path(tmp) / "pgdata"
        server = server_for(pgdata)
        try:
            asyncio.run(run(args, rows, queries, server.url("postgres", "postgres")))
        finally:
            release_server(pgdata)


if __name__ == "__main__":
    main()
