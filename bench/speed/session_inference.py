"""What inferring sessions costs at ingest: POST /v1/episodes/batch with and without it.

Starts an embedded PostgreSQL under `--pgdata`, makes a new database at head and serves the
app in this process (authentication off, tenant 'default'). Posts `--episodes` generated
episodes without a session_id twice, once with `episode_session_gap_minutes` at `--gap` and
once at 0 (off), in batches of `--batch`, each side into butlers of its own; the two
alternate batch by batch (which goes first alternates too) so a noisy machine weighs on both
alike. Each butler's turns are a minute apart with a two-hour pause every 40 turns, so the
rule both chains and starts sessions. Prints the time of each side, the difference as a share
of the ingest time without inference, the time spent in the neighbour lookup itself (timed
around `repositories/episodes.inferred_around`) and the sessions made.

    python -m bench.speed.session_inference --episodes 5000 --batch 250
"""

import argparse
import asyncio
import random
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg
import httpx

from app.core.config import JobSettings, Settings
from app.main import create_app
from app.postgres import migrations
from app.postgres.db import create_engine, replace_database, start_embedded_postgres, to_async_url
from app.services import episodes as episode_service
from bench.common.texts import BUTLERS, sentence

START = datetime(2024, 3, 1, 8, 0, tzinfo=UTC)


def episodes(n: int, side: str, rng: random.Random) -> list[dict[str, Any]]:
    """n generated episodes without a session_id, spread over the side's butlers in time."""
    clocks = dict.fromkeys(BUTLERS, START)
    counts = dict.fromkeys(BUTLERS, 0)
    items = []
    for _ in range(n):
        butler = rng.choice(BUTLERS)
        counts[butler] += 1
        step = timedelta(hours=2) if counts[butler] % 40 == 0 else timedelta(minutes=1)
        clocks[butler] += step
        items.append(
            {
                "content": sentence(rng),
                "butler": f"{butler}-{side}",
                "occurred_at": clocks[butler].isoformat(),
            }
        )
    return items


async def run(args: argparse.Namespace) -> None:
    server = start_embedded_postgres(args.pgdata.resolve())
    name = f"bench_sessions_{int(time.time())}"
    admin = await asyncpg.connect(server)
    await admin.execute(f'CREATE DATABASE "{name}"')
    url = to_async_url(replace_database(server, name))
    try:
        engine = create_engine(url, pool_size=1)
        await migrations.upgrade(engine)
        await engine.dispose()
        rng = random.Random(args.seed)
        sides = {
            True: episodes(args.episodes, "on", rng),
            False: episodes(args.episodes, "off", rng),
        }
        settings = Settings(
            database_url=url,
            migrate_on_start=False,
            auth_disabled=True,
            jobs=JobSettings(worker_enabled=False, scheduler_enabled=False),
        )
        app = create_app(settings)
        elapsed = {True: 0.0, False: 0.0}
        lookup = [0.0]
        around = episode_service.episode_rows.inferred_around

        async def timed(*a: Any, **kw: Any) -> Any:
            began = time.perf_counter()
            try:
                return await around(*a, **kw)
            finally:
                lookup[0] += time.perf_counter() - began

        episode_service.episode_rows.inferred_around = timed  # type: ignore[assignment]
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(
                transport=transport, base_url="http://127.0.0.1", timeout=900
            ) as http:
                # Warm the model and the statements on both paths before timing.
                for infer in (True, False):
                    app.state.settings.episode_session_gap_minutes = args.gap if infer else 0
                    warm = [
                        {"content": sentence(rng), "butler": f"warm-{infer}"}
                        for _ in range(args.batch)
                    ]
                    (await http.post("/v1/episodes/batch", json={"items": warm})).raise_for_status()
                lookup[0] = 0.0
                for index, start in enumerate(range(0, args.episodes, args.batch)):
                    order = (True, False) if index % 2 == 0 else (False, True)
                    for infer in order:
                        chunk = sides[infer][start : start + args.batch]
                        app.state.settings.episode_session_gap_minutes = args.gap if infer else 0
                        began = time.perf_counter()
                        response = await http.post("/v1/episodes/batch", json={"items": chunk})
                        elapsed[infer] += time.perf_counter() - began
                        response.raise_for_status()
        connection = await asyncpg.connect(url.replace("postgresql+asyncpg", "postgresql"))
        sessions = await connection.fetchval(
            "SELECT count(DISTINCT inferred_session) FROM episodes WHERE butler LIKE '%-on'"
        )
        await connection.close()
        cost = elapsed[True] - elapsed[False]
        print(
            "| episodes a side | batch | gap (min) | without inference | with inference "
            "| difference | ratio | neighbour lookup | sessions made |"
        )
        print("|---|---|---|---|---|---|---|---|---|")
        print(
            f"| {args.episodes} | {args.batch} | {args.gap:g} "
            f"| {elapsed[False]:.1f} s | {elapsed[True]:.1f} s "
            f"| {cost:+.1f} s ({100 * cost / elapsed[False]:+.1f}%) "
            f"| {elapsed[True] / elapsed[False]:.3f} "
            f"| {lookup[0]:.2f} s ({100 * lookup[0] / elapsed[False]:.1f}%) "
            f"| {sessions} |",
            flush=True,
        )
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=5_000, help="episodes a side")
    parser.add_argument("--batch", type=int, default=250)
    parser.add_argument("--gap", type=float, default=15.0, help="minutes, for the 'on' side")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--pgdata",
        type=Path,
        default=Path(".bench-pg"),
        help="the embedded PostgreSQL's data directory",
    )
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
