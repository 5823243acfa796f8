"""Seed a large store straight into PostgreSQL, for speed runs past what the model can embed.

Embedding a million episodes takes about an hour of the model alone on two cores, so this
script writes `common/texts.py`'s generated sentences with INSERTs as the database owner (the
keyword triggers run as for any write) and composes each vector from the model's embeddings
of the sentence's parts: normalise(name + activity + place + time + feeling). A query the
model embeds then lands near the sentences that share its parts, as with real vectors; the
vectors are not the model's own for those sentences, so this is a store for latency, never
for recall.

Each episode's metadata carries four flags for filtered searches (bench/speed/filter_search.py):
`p50`, `p5`, `p05` and `p005` are true on 50%, 5%, 0.5% and 0.05% of the episodes, by their
position in the load (the content is random, so a flag is unrelated to what a row says).

The episodes' HNSW index is dropped before the load and built again after it (timed), with
the given `maintenance_work_mem` and one parallel worker. Episodes are stored as already
consolidated, so the consolidation job finds nothing to do during the timed runs.

    engram serve --no-auth --port 8795 &                # on a new data directory
    curl -s localhost:8795/v1/episodes -H 'content-type: application/json' \\
         -d '{"content": "first", "butler": "chat"}'     # creates the model version row
    python -m bench.speed.seed_sql --database-url postgresql://postgres@/engram?host=... --n 1000000
    python -m bench.speed.endpoints --base-url http://127.0.0.1:8795 --skip-seed
"""

import argparse
import asyncio
import random
import sys
import time

import asyncpg

from app.core.config import Settings
from app.embedding.embedder import build_embedder
from bench.common.texts import ACTIVITIES, BUTLERS, FEELINGS, NAMES, PLACES, TIMES

PARTS = {
    "name": NAMES,
    "activity": ACTIVITIES,
    "place": PLACES,
    "time": TIMES,
    "feeling": [f for f in FEELINGS if f],
}
HNSW_INDEX = (
    "CREATE INDEX ix_episodes_embedding_hnsw ON episodes USING hnsw (embedding vector_cosine_ops)"
)


def vector_text(vector: list[float]) -> str:
    """pgvector's text form."""
    return "[" + ",".join(f"{x:.7g}" for x in vector) + "]"


async def load_parts(connection: asyncpg.Connection) -> None:
    """A temporary table of every sentence part and its embedding."""
    embedder = build_embedder(Settings())
    try:
        await connection.execute(
            f"CREATE TEMP TABLE part (kind text, i int, "
            f"v vector({embedder.dimensions}), PRIMARY KEY (kind, i))"
        )
        for kind, texts in PARTS.items():
            vectors = embedder.embed_batch(texts)
            await connection.executemany(
                "INSERT INTO part VALUES ($1, $2, $3::vector)",
                [(kind, i, vector_text(list(v))) for i, v in enumerate(vectors)],
            )
    finally:
        embedder.close()


def batch_rows(rng: random.Random, size: int) -> list[list[object]]:
    """Columns of `size` episodes: butler, content, importance and the part indexes."""
    columns: list[list[object]] = [[] for _ in range(8)]
    for _ in range(size):
        picks = {kind: rng.randrange(len(texts)) for kind, texts in PARTS.items()}
        feeling = picks["feeling"] if rng.random() < 0.8 else None
        words = [
            NAMES[picks["name"]],
            ACTIVITIES[picks["activity"]],
            PLACES[picks["place"]],
            TIMES[picks["time"]],
        ]
        if feeling is not None:
            words.append(PARTS["feeling"][feeling])
        row = [
            rng.choice(BUTLERS),
            " ".join(words) + ".",
            float(rng.randint(1, 10)),
            picks["name"],
            picks["activity"],
            picks["place"],
            picks["time"],
            feeling,
        ]
        for column, value in zip(columns, row, strict=True):
            column.append(value)
    return columns


INSERT = """
    INSERT INTO episodes (tenant_id, butler, content, importance, embedding, search_vector,
                          embedding_version_id, consolidated, consolidation_status, expires_at,
                          metadata)
    SELECT $1, u.butler, u.content, u.importance,
           l2_normalize(coalesce(n.v + a.v + p.v + t.v + f.v, n.v + a.v + p.v + t.v)),
           to_tsvector('english', u.content), $2, true, 'consolidated', now() + interval '30 days',
           jsonb_build_object('p50', ($11 + u.n) % 2 = 0, 'p5', ($11 + u.n) % 20 = 1,
                              'p05', ($11 + u.n) % 200 = 3, 'p005', ($11 + u.n) % 2000 = 7)
    FROM unnest($3::text[], $4::text[], $5::float8[], $6::int[], $7::int[], $8::int[],
                $9::int[], $10::int[]) WITH ORDINALITY
         AS u(butler, content, importance, ni, ai, pi, ti, fi, n)
    JOIN part n ON n.kind = 'name' AND n.i = u.ni
    JOIN part a ON a.kind = 'activity' AND a.i = u.ai
    JOIN part p ON p.kind = 'place' AND p.i = u.pi
    JOIN part t ON t.kind = 'time' AND t.i = u.ti
    LEFT JOIN part f ON f.kind = 'feeling' AND f.i = u.fi
"""


async def insert_episodes(
    connection: asyncpg.Connection,
    tenant: str,
    version: int,
    n: int,
    rng: random.Random,
    batch: int = 5_000,
    progress: bool = False,
) -> None:
    """Insert `n` generated episodes of `tenant`, a transaction per batch (the parts loaded)."""
    started = time.perf_counter()
    for done in range(0, n, batch):
        size = min(batch, n - done)
        async with connection.transaction():
            await connection.execute("SET LOCAL engram.system = 'on'")
            await connection.execute(INSERT, tenant, version, *batch_rows(rng, size), done)
        if progress and ((done + size) % (batch * 20) == 0 or done + size == n):
            rate = (done + size) / (time.perf_counter() - started)
            print(f"  {done + size}/{n} episodes, {rate:.0f}/s", file=sys.stderr)


async def latest_version(connection: asyncpg.Connection) -> int:
    """The newest embedding version's id; exits when no episode was stored yet."""
    version = await connection.fetchval(
        "SELECT id FROM embedding_versions ORDER BY id DESC LIMIT 1"
    )
    if version is None:
        raise SystemExit("no embedding version yet: store one episode through the API")
    return int(version)


async def run(args: argparse.Namespace) -> None:
    connection = await asyncpg.connect(args.database_url)
    try:
        await connection.execute("SELECT set_config('engram.system', 'on', false)")
        version = await latest_version(connection)
        await load_parts(connection)
        await connection.execute("DROP INDEX IF EXISTS ix_episodes_embedding_hnsw")
        rng = random.Random(args.seed)
        started = time.perf_counter()
        await insert_episodes(connection, args.tenant, version, args.n, rng, args.batch, True)
        load_seconds = time.perf_counter() - started
        print(
            f"load: {args.n} episodes in {load_seconds:.0f} s "
            f"({args.n / load_seconds:.0f}/s, keyword triggers on, no HNSW index)"
        )
        await connection.execute(f"SET maintenance_work_mem = '{args.maintenance_work_mem}'")
        await connection.execute("SET max_parallel_maintenance_workers = 1")
        started = time.perf_counter()
        await connection.execute(HNSW_INDEX)
        print(
            f"HNSW index build: {time.perf_counter() - started:.0f} s "
            f"(maintenance_work_mem {args.maintenance_work_mem}, 1 parallel worker)"
        )
        started = time.perf_counter()
        await connection.execute("VACUUM ANALYZE episodes")
        await connection.execute("VACUUM ANALYZE keyword_postings")
        print(f"VACUUM ANALYZE: {time.perf_counter() - started:.0f} s")
    finally:
        await connection.close()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--database-url", required=True, help="owner URL (libpq form)")
    parser.add_argument("--n", type=int, default=1_000_000, help="episodes to seed")
    parser.add_argument("--batch", type=int, default=5_000)
    parser.add_argument("--tenant", default="default")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--maintenance-work-mem", default="4GB")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
