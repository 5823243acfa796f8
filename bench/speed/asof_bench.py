"""Reads at a point in time at scale: p95 of as-of and known-at reads beside today's read.

Seeds, straight into a database at head (as the owner, in the system scope, so row-level
security lets the seed write for tenant 'default'), F facts in keys of V versions each: a
key's versions start at random moments between 2000 and 2025 in valid-time order, each
holding until the next one starts (the last one active, open-ended), stored in that order
over the same years (record time), each with the periods it was believed to have: open-ended
until its successor was stored, then closed at the successor's start. Facts get random unit
vectors (the timing, not the quality, is measured).

Then times, in one run, one read at a time in the tenant's scope, each read three ways:
today's (active facts), `as_of` a random moment (valid time), and `as_of` with `known_at` a
random moment (record time):

- the fact listing of one key (`repositories/facts.list_facts`, GET /v1/facts's SQL);
- the hybrid candidate statement of search over facts
  (`repositories/search/candidates.search_candidates`:
  semantic and keyword legs with their rows, /v1/search's one round trip).

    python -m bench.speed.asof_bench --facts 100000 --versions 10   # embedded server, ./bench-data
    python -m bench.speed.asof_bench --database-url postgresql+asyncpg://... --skip-seed
"""

import argparse
import asyncio
import random
import statistics
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path

import numpy as np
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from app.core.config import Settings
from app.core.scope import Scope, scope_session
from app.postgres import migrations
from app.postgres.db import create_engine, resolve_database_url
from app.repositories import facts as fact_rows
from app.repositories.facts import FactFilters
from app.repositories.search.candidates import Filters, configure_vector_scan, search_candidates
from bench.common.texts import NAMES, question, sentence

SYSTEM = "SELECT set_config('engram.system', 'on', true)"
TENANT = "default"
START, END = datetime(2000, 1, 1, tzinfo=UTC), datetime(2025, 1, 1, tzinfo=UTC)
BATCH = 2000


def vectors(rng: np.random.Generator, n: int) -> list[str]:
    """n random unit vectors in pgvector's text form."""
    raw = rng.standard_normal((n, 384)).astype(np.float32)
    raw /= np.linalg.norm(raw, axis=1, keepdims=True)
    return ["[" + ",".join(f"{x:.5f}" for x in row) + "]" for row in raw]


def moment(rng: random.Random) -> datetime:
    """A random moment between START and END."""
    return START + timedelta(seconds=rng.uniform(0, (END - START).total_seconds()))


def key_versions(rng: random.Random, versions: int) -> list[tuple[datetime, datetime]]:
    """(valid_from, recorded_at) of a key's versions, both in order."""
    starts = sorted(moment(rng) for _ in range(versions))
    stored = sorted(moment(rng) for _ in range(versions))
    return list(zip(starts, stored, strict=True))


async def seed(engine: AsyncEngine, *, facts: int, versions: int, seed_value: int) -> int:
    """Insert the facts and their periods; how many keys."""
    rng, nrng = random.Random(seed_value), np.random.default_rng(seed_value)
    keys = max(1, facts // versions)
    per_batch = max(1, BATCH // versions)
    for first in range(0, keys, per_batch):
        fact: dict[str, list[object]] = {
            name: []
            for name in (
                "id",
                "subject",
                "content",
                "valid_from",
                "valid_until",
                "created_at",
                "validity",
            )
        }
        period: dict[str, list[object]] = {
            name: []
            for name in ("fact_id", "valid_from", "valid_until", "recorded_at", "recorded_until")
        }
        for key in range(first, min(keys, first + per_batch)):
            timeline = key_versions(rng, versions)
            subject = f"{rng.choice(NAMES)} {key}"
            for index, (valid_from, created_at) in enumerate(timeline):
                following = timeline[index + 1] if index + 1 < len(timeline) else None
                fact_id = uuid.uuid4()
                valid_until = None if following is None else following[0]
                for column, value in (
                    ("id", fact_id),
                    ("subject", subject),
                    ("content", sentence(rng)),
                    ("valid_from", valid_from),
                    ("valid_until", valid_until),
                    ("created_at", created_at),
                    ("validity", "superseded" if following else "active"),
                ):
                    fact[column].append(value)
                # Open-ended until its successor was stored, then closed where it starts.
                believed = (
                    [(None, created_at, None)]
                    if following is None
                    else [(None, created_at, following[1]), (valid_until, following[1], None)]
                )
                for until, since, ended in believed:
                    for column, value in (
                        ("fact_id", fact_id),
                        ("valid_from", valid_from),
                        ("valid_until", until),
                        ("recorded_at", since),
                        ("recorded_until", ended),
                    ):
                        period[column].append(value)
        async with engine.begin() as conn:
            await conn.execute(text(SYSTEM))
            await conn.execute(
                text("""
                INSERT INTO facts (id, tenant_id, subject, predicate, subject_key,
                                   predicate_key, content, valid_from, valid_until, created_at,
                                   last_confirmed_at, validity, embedding, search_vector)
                SELECT i, :t, s, 'employer', lower(s), 'employer', c, vf, vu, ca, now(), v,
                       CAST(e AS vector), to_tsvector('english', c)
                FROM unnest(CAST(:i AS uuid[]), CAST(:s AS text[]), CAST(:c AS text[]),
                            CAST(:vf AS timestamptz[]), CAST(:vu AS timestamptz[]),
                            CAST(:ca AS timestamptz[]), CAST(:v AS text[]),
                            CAST(:e AS text[])) AS x(i, s, c, vf, vu, ca, v, e)
            """),
                {
                    "t": TENANT,
                    "i": fact["id"],
                    "s": fact["subject"],
                    "c": fact["content"],
                    "vf": fact["valid_from"],
                    "vu": fact["valid_until"],
                    "ca": fact["created_at"],
                    "v": fact["validity"],
                    "e": vectors(nrng, len(fact["id"])),
                },
            )
            await conn.execute(
                text("""
                INSERT INTO fact_periods (tenant_id, fact_id, valid_from, valid_until,
                                          recorded_at, recorded_until)
                SELECT :t, f, vf, vu, ra, ru
                FROM unnest(CAST(:f AS uuid[]), CAST(:vf AS timestamptz[]),
                            CAST(:vu AS timestamptz[]), CAST(:ra AS timestamptz[]),
                            CAST(:ru AS timestamptz[])) AS x(f, vf, vu, ra, ru)
            """),
                {
                    "t": TENANT,
                    "f": period["fact_id"],
                    "vf": period["valid_from"],
                    "vu": period["valid_until"],
                    "ra": period["recorded_at"],
                    "ru": period["recorded_until"],
                },
            )
    async with engine.begin() as conn:
        await conn.execute(text("ANALYZE facts"))
        await conn.execute(text("ANALYZE fact_periods"))
    return keys


def summary(name: str, seconds: list[float]) -> str:
    """median and p95 in ms."""
    ordered = sorted(seconds)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return (
        f"{name:<34} n={len(ordered):>4}  p50 {1000 * statistics.median(ordered):7.2f} ms"
        f"  p95 {1000 * p95:7.2f} ms"
    )


async def timed(engine: AsyncEngine, work: Callable[[AsyncSession], Awaitable[object]]) -> float:
    """Seconds one read takes in a transaction of the tenant's scope."""
    async with AsyncSession(engine) as session:
        scope_session(session, Scope(tenant_id=TENANT))
        await session.execute(text("SELECT 1"))  # the scope's settings, outside the timing
        start = time.perf_counter()
        await work(session)
        elapsed = time.perf_counter() - start
        await session.rollback()
    return elapsed


async def _list(session: AsyncSession, *, filters: FactFilters) -> object:
    return await fact_rows.list_facts(
        session, tenant_id=TENANT, filters=filters, limit=50, cursor=None
    )


async def _search(
    session: AsyncSession, *, filters: Filters, vector: np.ndarray, query: str
) -> object:
    await configure_vector_scan(session, ef_search=100, max_scan_tuples=20000)
    return await search_candidates(
        session, types=("fact",), filters=filters, vector=vector, query=query, limit=30
    )


async def measure(engine: AsyncEngine, *, keys: int, queries: int, seed_value: int) -> None:
    """Time each read today, as of a moment, and as of a moment as known at another."""
    rng, nrng = random.Random(seed_value + 1), np.random.default_rng(seed_value + 1)
    async with engine.begin() as conn:
        await conn.execute(text(SYSTEM))
        subjects = list(
            (
                await conn.execute(
                    text("SELECT DISTINCT subject_key FROM facts WHERE tenant_id = :t"),
                    {"t": TENANT},
                )
            ).scalars()
        )
    timings: dict[str, list[float]] = {}
    for index in range(queries):
        subject = rng.choice(subjects)
        as_of, known_at = moment(rng), moment(rng)
        vector = nrng.standard_normal(384).astype(np.float32)
        vector /= np.linalg.norm(vector)
        query = question(rng, index)
        for label, at in (
            ("today", (None, None)),
            ("as_of", (as_of, None)),
            ("as_of + known_at", (as_of, known_at)),
        ):
            listing = FactFilters(
                subject_key=subject,
                predicate_key="employer",
                validity="active" if at[0] is None else None,
                as_of=at[0],
                known_at=at[1],
            )
            filters = Filters(
                tenant_id=TENANT, scope=None, min_confidence=0.2, as_of=at[0], known_at=at[1]
            )

            timings.setdefault(f"fact list, {label}", []).append(
                await timed(engine, partial(_list, filters=listing))
            )
            timings.setdefault(f"search candidates, {label}", []).append(
                await timed(engine, partial(_search, filters=filters, vector=vector, query=query))
            )
    print(f"{keys} keys; {queries} reads of each kind")
    for name, seconds in timings.items():
        print(summary(name, seconds))


async def run(args: argparse.Namespace) -> None:
    """Migrate, seed unless told not to, measure."""
    settings = Settings(data_dir=args.data_dir, database_url=args.database_url)
    engine = create_engine(await resolve_database_url(settings), pool_size=1)
    try:
        await migrations.upgrade(engine)
        if args.skip_seed:
            async with engine.begin() as conn:
                await conn.execute(text(SYSTEM))
                keys = (
                    await conn.execute(text("SELECT count(DISTINCT subject_key) FROM facts"))
                ).scalar_one()
        else:
            start = time.perf_counter()
            keys = await seed(
                engine, facts=args.facts, versions=args.versions, seed_value=args.seed
            )
            print(
                f"seeded {keys * args.versions} facts in {keys} keys of {args.versions} "
                f"versions in {time.perf_counter() - start:.0f} s"
            )
        await measure(engine, keys=keys, queries=args.queries, seed_value=args.seed)
    finally:
        await engine.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--database-url",
        default=None,
        help="a database (owner); default: the embedded server in --data-dir",
    )
    parser.add_argument("--data-dir", type=Path, default=Path("bench-data"))
    parser.add_argument("--facts", type=int, default=100_000)
    parser.add_argument("--versions", type=int, default=10, help="versions per key")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--skip-seed", action="store_true")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
