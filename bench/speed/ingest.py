"""Ingest throughput through POST /v1/episodes/batch, beside its floors (model, SQL).

Two kinds of episode, each posted in batches (default 500) with `--concurrency` batches
in flight:
* short: generated sentences of at most 200 characters (bench/common/texts.py's generator);
* long: LongMemEval_S dev chat turns (`role: content`), in haystack order; with
  `--sessions` each haystack session gets its own `session_id`, as a chat client would
  send, which adds a context passage per turn (see docs/search.md: context passages).

Floors, measured in this process in the same run on the same texts:
* model: the server's embedding backend on every text the service embeds for those
  episodes (the content, its windows when longer than the passage size, its context
  passage), in the service's model calls through its scheduler (workers, one tenant);
* SQL (with `--database-url`, the owner's URL): the same batches INSERTed into `episodes`
  with precomputed vectors, one statement per batch with its triggers, rolled back.

    engram serve --no-auth --port 8790 &     # a new data directory
    python -m bench.speed.ingest --base-url http://127.0.0.1:8790 --short 5000 --long 3000 \
        --database-url 'postgresql://postgres@/engram?host=<data dir>/pgdata/run'
"""

import argparse
import asyncio
import gzip
import json
import random
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

from bench.common.texts import BUTLERS, sentence

DEFAULT_LONGMEMEVAL = Path("/work/shared/data/longmemeval/longmemeval_s_dev.json.gz")
Item = dict[str, Any]


def short_items(n: int, seed: int) -> list[Item]:
    """n generated episodes of at most 200 characters, over the common/texts.py butlers."""
    rng = random.Random(seed)
    return [{"content": sentence(rng), "butler": rng.choice(BUTLERS)} for _ in range(n)]


def long_items(n: int, path: Path, *, sessions: bool) -> list[Item]:
    """The first n LongMemEval_S dev turns, one butler per question."""
    if n <= 0:
        return []
    with gzip.open(path, "rt") as handle:
        data = json.load(handle)
    items: list[Item] = []
    run = uuid.uuid4().hex[:8]
    for question in data:
        for session_id, session in zip(
            question["haystack_session_ids"], question["haystack_sessions"], strict=True
        ):
            for turn in session:
                item: Item = {
                    "content": f"{turn['role']}: {turn['content']}"[:50_000],
                    "butler": f"ingest-{question['question_id']}",
                }
                if sessions:
                    item["session_id"] = f"{run}-{session_id}"
                items.append(item)
                if len(items) == n:
                    return items
    return items


async def post_batches(
    http: httpx.AsyncClient, items: list[Item], *, batch: int, concurrency: int
) -> float:
    """Post the items in batches, `concurrency` in flight, in order; returns episodes/s."""
    batches = [items[i : i + batch] for i in range(0, len(items), batch)]
    queue: asyncio.Queue[list[Item]] = asyncio.Queue()
    for chunk in batches:
        queue.put_nowait(chunk)
    started = time.perf_counter()

    async def worker() -> None:
        while not queue.empty():
            chunk = queue.get_nowait()
            response = await http.post("/v1/episodes/batch", json={"items": chunk})
            response.raise_for_status()

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return len(items) / (time.perf_counter() - started)


def embedded_texts(items: list[Item]) -> tuple[list[str], list[int]]:
    """Every text the service embeds for these items (content, windows, context passage),
    and where each item's content is among them."""
    from app.core.config import Settings
    from app.core.text import context_text, split_passages

    settings = Settings()
    texts: list[str] = []
    contents: list[int] = []
    earlier: dict[str, list[str]] = {}
    for item in items:
        content = item["content"]
        contents.append(len(texts))
        texts.append(content)
        texts += [
            content[start:end]
            for start, end in split_passages(
                content,
                size=settings.embedding_passage_chars,
                overlap=settings.embedding_passage_overlap,
            )
        ]
        if "session_id" in item:
            previous = earlier.setdefault(item["session_id"], [])
            if previous:
                texts.append(context_text(previous[-settings.embedding_context_turns :], content))
            previous.append(content)
    return texts, contents


async def model_floor(items: list[Item], backend: str | None) -> tuple[float, list[list[float]]]:
    """Episodes/s of the model alone on the texts the service embeds, through the service's
    scheduler (its model calls and workers, one tenant); the content vectors."""
    from app.core.config import Settings
    from app.embedding import get_embedder

    settings = Settings() if backend is None else Settings(embedding_backend=backend)
    embedder = get_embedder(settings)  # built from every setting, as the server builds it
    embedder.load()
    texts, contents = embedded_texts(items)
    started = time.perf_counter()
    vectors = await embedder.aembed_batch(texts, tenant_id="floor")
    rate = len(items) / (time.perf_counter() - started)
    return rate, [vectors[i] for i in contents]


async def sql_floor(url: str, items: list[Item], vectors: list[list[float]], batch: int) -> float:
    """Episodes/s of the INSERTs alone (with triggers and indexes), rolled back."""
    import asyncpg

    connection = await asyncpg.connect(url)
    elapsed = 0.0
    try:
        transaction = connection.transaction()
        await transaction.start()
        await connection.execute("SELECT set_config('engram.system', 'on', true)")
        for i in range(0, len(items), batch):
            chunk = items[i : i + batch]
            literals = ["[" + ",".join(map(str, v)) + "]" for v in vectors[i : i + batch]]
            started = time.perf_counter()
            await connection.execute(
                "INSERT INTO episodes (tenant_id, butler, session_id, content, embedding, "
                "search_vector, expires_at) "
                "SELECT 'bench-ingest-floor', b, s, c, v::vector, to_tsvector('english', c), "
                "now() + interval '7 days' FROM unnest($1::text[], $2::text[], $3::text[], "
                "$4::text[]) AS u(b, s, c, v)",
                [it["butler"] for it in chunk],
                [it.get("session_id") for it in chunk],
                [it["content"] for it in chunk],
                literals,
            )
            elapsed += time.perf_counter() - started
        await transaction.rollback()
    finally:
        await connection.close()
    return len(items) / elapsed


async def run(args: argparse.Namespace) -> None:
    kinds = {
        "short": short_items(args.short, args.seed),
        "long" + (" with sessions" if args.sessions else ""): long_items(
            args.long, args.longmemeval, sessions=args.sessions
        ),
    }
    print(
        f"| texts | episodes | mean chars | through HTTP (batch {args.batch}, "
        f"{args.concurrency} in flight) | floor: model alone | floor: SQL alone |"
    )
    print("|---|---|---|---|---|---|")
    async with httpx.AsyncClient(base_url=args.base_url, timeout=900) as http:
        for kind, items in kinds.items():
            if not items:
                continue
            http_rate = await post_batches(
                http, items, batch=args.batch, concurrency=args.concurrency
            )
            model_rate, vectors = await model_floor(items, args.backend)
            sql_rate = (
                f"{await sql_floor(args.database_url, items, vectors, args.batch):.0f}/s"
                if args.database_url
                else "-"
            )
            mean_chars = sum(len(item["content"]) for item in items) / len(items)
            print(
                f"| {kind} | {len(items)} | {mean_chars:.0f} | {http_rate:.0f}/s "
                f"| {model_rate:.0f}/s | {sql_rate} |",
                flush=True,
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", default="http://127.0.0.1:8000")
    parser.add_argument("--short", type=int, default=5000, help="short episodes to post")
    parser.add_argument("--long", type=int, default=3000, help="LongMemEval turns to post")
    parser.add_argument("--longmemeval", type=Path, default=DEFAULT_LONGMEMEVAL)
    parser.add_argument(
        "--sessions", action="store_true", help="give the long turns their haystack session ids"
    )
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument(
        "--backend",
        help="embedding backend of the model floor (default: settings; use the server's)",
    )
    parser.add_argument("--database-url", help="owner URL (asyncpg form) for the SQL floor")
    asyncio.run(run(args=parser.parse_args()))


if __name__ == "__main__":
    main()
