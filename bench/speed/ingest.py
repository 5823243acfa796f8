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
  passage: an episode without a session_id has one in its inferred session), in the
  model calls a batch makes (`bulk`, as many batches in flight, through the service's
  scheduler and its workers, the background one included);
* SQL (with `--database-url`, the owner's URL): the same batches INSERTed into `episodes`
  and their passages into `passages`, with the model's vectors, one statement each per
  batch with their triggers and indexes, rolled back.

The two floors share the cores when the service ingests: the model's calls run on two
threads, the SQL on one connection. Together they bound the rate at
1 / (1/model + 1/(2 x SQL)) episodes a second, printed as "floors together".

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
from dataclasses import dataclass
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


@dataclass
class Batch:
    """One posted batch as the service embeds and stores it: its items, the texts in the order
    it embeds them (the items' contents, their windows, their context passages) and, for each
    text after the contents, the passage it makes: (item in the batch, kind, ordinal, start,
    end)."""

    items: list[Item]
    texts: list[str]
    passages: list[tuple[int, str, int, int, int]]
    vectors: list[Any] | None = None  # the model's rows, in the order of texts


def embedded_batches(items: list[Item], batch: int) -> list[Batch]:
    """Every batch of these items with the texts the service embeds for it.

    An item without a session_id joins its butler's inferred session when the session gap
    is on: the run posts within minutes, so each butler's items make one session."""
    from app.core.config import Settings
    from app.core.text import split_passages
    from app.services.episodes import session_contexts

    settings = Settings()
    inferred = settings.episode_session_gap_minutes > 0
    keys = [
        (item["butler"], item.get("session_id")) if "session_id" in item or inferred else None
        for item in items
    ]
    contexts = session_contexts(
        [(key, item["content"]) for key, item in zip(keys, items, strict=True)],
        turns=settings.embedding_context_turns,
    )
    batches: list[Batch] = []
    for i in range(0, len(items), batch):
        posted = items[i : i + batch]
        contents = [item["content"] for item in posted]
        windows: list[str] = []
        passages: list[tuple[int, str, int, int, int]] = []
        for index, content in enumerate(contents):
            spans = split_passages(
                content,
                size=settings.embedding_passage_chars,
                overlap=settings.embedding_passage_overlap,
            )
            for ordinal, (start, end) in enumerate(spans):
                windows.append(content[start:end])
                passages.append((index, "window", ordinal, start, end))
        in_context: list[str] = []
        for index, context in enumerate(contexts[i : i + batch]):
            if context is not None:
                in_context.append(context)
                passages.append((index, "context", 0, 0, len(contents[index])))
        batches.append(Batch(posted, [*contents, *windows, *in_context], passages))
    return batches


async def model_floor(batches: list[Batch], backend: str | None, *, concurrency: int) -> float:
    """Episodes/s of the model alone on the texts the service embeds, in the model calls a
    batch makes (`bulk`, as many batches in flight, one tenant, through the service's
    scheduler and workers); each batch keeps its vectors."""
    from app.core.config import Settings
    from app.embedding import get_embedder

    settings = Settings() if backend is None else Settings(embedding_backend=backend)
    embedder = get_embedder(settings)  # built from every setting, as the server builds it
    embedder.load()
    queue: asyncio.Queue[Batch] = asyncio.Queue()
    for one in batches:
        queue.put_nowait(one)

    async def worker() -> None:
        while not queue.empty():
            one = queue.get_nowait()
            texts: list[str | None] = [*one.texts]
            one.vectors = await embedder.aembed_batch(texts, tenant_id="floor", bulk=True)

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    episodes = sum(len(one.items) for one in batches)
    return episodes / (time.perf_counter() - started)


def _literal(vector: Any) -> str:
    return "[" + ",".join(map(str, vector)) + "]"


async def sql_floor(url: str, batches: list[Batch]) -> float:
    """Episodes/s of the INSERTs alone of the episodes and their passages, with their
    triggers and indexes, one statement each per batch, rolled back."""
    import asyncpg

    connection = await asyncpg.connect(url)
    elapsed = 0.0
    try:
        transaction = connection.transaction()
        await transaction.start()
        await connection.execute("SELECT set_config('engram.system', 'on', true)")
        for one in batches:
            assert one.vectors is not None
            count = len(one.items)
            ids = [uuid.uuid4() for _ in one.items]
            episodes = (
                ids,
                [it["butler"] for it in one.items],
                [it.get("session_id") for it in one.items],
                [it["content"] for it in one.items],
                [_literal(v) for v in one.vectors[:count]],
            )
            passages = (
                [ids[index] for index, *_ in one.passages],
                [kind for _, kind, *_ in one.passages],
                [ordinal for _, _, ordinal, _, _ in one.passages],
                [begin for *_, begin, _ in one.passages],
                [end for *_, end in one.passages],
                [_literal(v) for v in one.vectors[count:]],
            )
            started = time.perf_counter()
            await connection.execute(
                "INSERT INTO episodes (id, tenant_id, butler, session_id, content, embedding, "
                "search_vector, expires_at) "
                "SELECT i, 'bench-ingest-floor', b, s, c, v::vector, to_tsvector('english', c), "
                "now() + interval '7 days' FROM unnest($1::uuid[], $2::text[], $3::text[], "
                "$4::text[], $5::text[]) AS u(i, b, s, c, v)",
                *episodes,
            )
            await connection.execute(
                "INSERT INTO passages (tenant_id, episode_id, kind, ordinal, start_char, "
                "end_char, embedding) "
                "SELECT 'bench-ingest-floor', e, k, o, s, x, v::vector FROM unnest($1::uuid[], "
                "$2::text[], $3::int[], $4::int[], $5::int[], $6::text[]) AS u(e, k, o, s, x, v)",
                *passages,
            )
            elapsed += time.perf_counter() - started
        await transaction.rollback()
    finally:
        await connection.close()
    return sum(len(one.items) for one in batches) / elapsed


async def run(args: argparse.Namespace) -> None:
    kinds = {
        "short": short_items(args.short, args.seed),
        "long" + (" with sessions" if args.sessions else ""): long_items(
            args.long, args.longmemeval, sessions=args.sessions
        ),
    }
    print(
        f"| texts | episodes | mean chars | through HTTP (batch {args.batch}, "
        f"{args.concurrency} in flight) | floor: model alone | floor: SQL alone "
        "| floors together | HTTP / model, / together |"
    )
    print("|---|---|---|---|---|---|---|---|")
    async with httpx.AsyncClient(base_url=args.base_url, timeout=900) as http:
        for kind, items in kinds.items():
            if not items:
                continue
            http_rate = await post_batches(
                http, items, batch=args.batch, concurrency=args.concurrency
            )
            batches = embedded_batches(items, args.batch)
            model_rate = await model_floor(batches, args.backend, concurrency=args.concurrency)
            mean_chars = sum(len(item["content"]) for item in items) / len(items)
            row = f"| {kind} | {len(items)} | {mean_chars:.0f} | {http_rate:.0f}/s "
            row += f"| {model_rate:.0f}/s "
            if args.database_url:
                sql_rate = await sql_floor(args.database_url, batches)
                together = 1 / (1 / model_rate + 1 / (2 * sql_rate))
                row += f"| {sql_rate:.0f}/s | {together:.0f}/s "
                row += f"| {http_rate / model_rate:.2f}, {http_rate / together:.2f} |"
            else:
                row += f"| - | - | {http_rate / model_rate:.2f}, - |"
            print(row, flush=True)


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
