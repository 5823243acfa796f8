"""Run retention and the PII scrub at scale: how long the scheduled jobs take.

Seeds, straight into a database at head (as the owner, in the system scope), R runs
finished two years ago with M messages and one feedback each, R/10 runs finished today,
and E episodes of which a share P holds an email address (rows carry no vectors: the scrub
embeds what it rewrites, and the retention pass never reads one). Then times, with the
packaged model:

- the cleanup job (no episode has expired): its run retention pass deletes the old runs
  with their messages and feedback, a batch per transaction;
- a PII scrub of every tenant: every message, feedback, rule and episode is checked once,
  the matching episodes are rewritten, embedded again and re-indexed;
- the same scrub again with nothing new stored: the rows are marked, so it reads none.

    python -m bench.speed.run_housekeeping --runs 20000 --messages 10 --episodes 20000
    python -m bench.speed.run_housekeeping --database-url postgresql+asyncpg://...
"""

import argparse
import asyncio
import time
from pathlib import Path

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from app.core.config import Settings
from app.embedding import get_embedder
from app.postgres import migrations
from app.postgres.db import create_engine, make_sessionmaker, resolve_database_url
from app.services.jobs import JobContext
from app.worker.cleanup import run_episode_cleanup
from app.worker.pii import run_pii_scrub

SYSTEM = "SELECT set_config('engram.system', 'on', true)"
TENANT = "bench"


async def seed(
    engine: AsyncEngine, *, runs: int, messages: int, episodes: int, share: float
) -> None:
    """Insert the runs (old and recent), their messages and feedback, and the episodes."""
    async with engine.begin() as conn:
        await conn.execute(text(SYSTEM))
        for finished, count in (
            ("now() - interval '730 days'", runs),
            ("now()", max(1, runs // 10)),
        ):
            await conn.execute(
                text(f"""
                WITH made AS (
                    INSERT INTO runs (tenant_id, task_id, summary, started_at, finished_at,
                                      success)
                    SELECT :t, 'task-' || (g % 50), 'Nightly report ' || g,
                           {finished} - interval '1 hour', {finished}, g % 3 <> 0
                    FROM generate_series(1, :n) g
                    RETURNING id),
                msgs AS (
                    INSERT INTO run_messages (tenant_id, run_id, role, content, token_count)
                    SELECT :t, made.id, 'executor', 'Step ' || s || ' of the report done', 8
                    FROM made, generate_series(1, :m) s)
                INSERT INTO run_feedback (tenant_id, run_id, source, rating, rationale)
                SELECT :t, id, 'critic', 0.4, 'Too slow on the totals' FROM made"""),
                {"t": TENANT, "n": count, "m": messages},
            )
        await conn.execute(
            text("""
            INSERT INTO episodes (tenant_id, butler, content, session_id, search_vector)
            SELECT :t, 'chat', c, 's-' || (g / 20), to_tsvector('english', c)
            FROM (SELECT g, CASE WHEN random() < :share
                             THEN 'Reach me at person' || g || '@example.com about the order'
                             ELSE 'The order ' || g || ' shipped on time' END AS c
                  FROM generate_series(1, :e) g) x"""),
            {"t": TENANT, "e": episodes, "share": share},
        )


async def timed(name: str, work: object) -> dict[str, object]:
    start = time.perf_counter()
    outcome = await work  # type: ignore[misc]
    seconds = time.perf_counter() - start
    print(f"{name}: {seconds:.1f} s  {outcome.result}")
    return {"seconds": seconds, **outcome.result}


async def run(args: argparse.Namespace) -> None:
    """Migrate, seed, time the three jobs."""
    settings = Settings(data_dir=args.data_dir, database_url=args.database_url)
    engine = create_engine(await resolve_database_url(settings), pool_size=2)
    try:
        await migrations.upgrade(engine)
        start = time.perf_counter()
        await seed(
            engine, runs=args.runs, messages=args.messages, episodes=args.episodes, share=args.share
        )
        print(
            f"seeded {args.runs + max(1, args.runs // 10)} runs x {args.messages} messages, "
            f"{args.episodes} episodes ({args.share:.0%} with an address) in "
            f"{time.perf_counter() - start:.0f} s"
        )
        ctx = JobContext(make_sessionmaker(engine), settings, get_embedder(settings))
        await ctx.embedder.aembed("warm the model up", tenant_id=TENANT)
        cleanup = await timed(
            "cleanup (run retention)", run_episode_cleanup(ctx, tenant_id=None, max_entries=10**9)
        )
        print(
            f"  {cleanup['runs_deleted'] / cleanup['seconds']:.0f} runs/s "
            f"({cleanup['run_messages_deleted']} messages)"
        )  # type: ignore[operator]
        first = await timed("pii scrub", run_pii_scrub(ctx, tenant_id=None, rescan=False))
        checked = sum(
            int(first[f"{kind}_checked"])
            for kind in ("messages", "feedback", "rules", "episodes")  # type: ignore[call-overload]
        )
        print(
            f"  {checked / first['seconds']:.0f} rows checked/s, "  # type: ignore[operator]
            f"{first['episodes_rewritten']} episodes rewritten"
        )
        await timed("pii scrub, nothing new", run_pii_scrub(ctx, tenant_id=None, rescan=False))
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
    parser.add_argument("--runs", type=int, default=20_000)
    parser.add_argument("--messages", type=int, default=10)
    parser.add_argument("--episodes", type=int, default=20_000)
    parser.add_argument(
        "--share", type=float, default=0.05, help="share of the episodes holding an address"
    )
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
