"""What linking mentions costs at ingest: POST /v1/episodes/batch with and without it.

Starts an embedded PostgreSQL under `--pgdata`, makes a new database at head and serves the
app in this process (authentication off, tenant 'default'). Seeds `--entities` organisations
(default 1,000), each with two aliases (its short name and a code), then posts `--episodes`
generated sentences twice, once with `[auto_links] mentions` on and once off, in batches of
`--batch`; the two alternate batch by batch (which goes first alternates too) so a noisy
machine weighs on both alike. About `--named` of the episodes name an organisation (by
name or alias, in any case). Prints the time of each side, the difference as a share of the
ingest time without mentions, the time spent in the mention statement itself (timed around
`repositories/mentions.link_mentions`, which a noisy machine blurs less than the
difference) and the links made.

    python -m bench.speed.mentions --episodes 10000 --entities 1000
"""

import argparse
import asyncio
import random
import time
from pathlib import Path
from typing import Any

import asyncpg
import httpx

from app.core.config import AutoLinkSettings, JobSettings, Settings
from app.main import create_app
from app.postgres import migrations
from app.postgres.db import create_engine, replace_database, start_embedded_postgres, to_async_url
from app.services import mentions as mention_service
from bench.common.texts import BUTLERS, sentence

SYLLABLES = [
    "ka",
    "lo",
    "ven",
    "tra",
    "mi",
    "sol",
    "dor",
    "qua",
    "zen",
    "bri",
    "fal",
    "nor",
    "pex",
    "ru",
    "tal",
    "gri",
    "mon",
    "sa",
    "vel",
    "cor",
]
SUFFIXES = ["Labs", "Group", "Holdings", "Systems", "Partners", "Works", "Industries"]


def organisations(n: int, rng: random.Random) -> list[tuple[str, list[str]]]:
    """n distinct (canonical name, [short name, code]) organisations."""
    seen: set[str] = set()
    out = []
    while len(out) < n:
        short = "".join(rng.choice(SYLLABLES) for _ in range(3)).capitalize()
        if short in seen:
            continue
        seen.add(short)
        code = f"{short[:3].upper()}-{len(out)}"
        out.append((f"{short} {rng.choice(SUFFIXES)}", [short, code]))
    return out


def episodes(
    n: int, orgs: list[tuple[str, list[str]]], named: float, rng: random.Random
) -> list[dict[str, Any]]:
    """n generated episodes; about `named` of them name an organisation."""
    items = []
    for _ in range(n):
        text = sentence(rng)
        if rng.random() < named:
            name, aliases = rng.choice(orgs)
            said = rng.choice([name, *aliases])
            said = rng.choice([said, said.lower(), said.upper()])
            text = f"{text[:-1]}, then met {said} about the contract."
        items.append({"content": text, "butler": rng.choice(BUTLERS)})
    return items


async def seed_entities(
    url: str, orgs: list[tuple[str, list[str]]], *, analyze: bool = True
) -> None:
    """The organisations, inserted as the owner for tenant 'default' (and their statistics
    gathered, unless `analyze` is False)."""
    connection = await asyncpg.connect(url.replace("postgresql+asyncpg", "postgresql"))
    try:
        async with connection.transaction():
            await connection.execute("SELECT set_config('engram.system', 'on', true)")
            await connection.executemany(
                "INSERT INTO entities (tenant_id, canonical_name, entity_type, aliases) "
                "VALUES ('default', $1, 'organization', $2)",
                [(name, aliases) for name, aliases in orgs],
            )
        if analyze:
            # What autovacuum does within a minute of such a load; without statistics the
            # planner takes the table for a few rows and tests every episode against every
            # entity instead of probing the name index (about 70 times slower here).
            await connection.execute("ANALYZE entities")
    finally:
        await connection.close()


async def run(args: argparse.Namespace) -> None:
    server = start_embedded_postgres(args.pgdata.resolve())
    name = f"bench_mentions_{int(time.time())}"
    admin = await asyncpg.connect(server)
    await admin.execute(f'CREATE DATABASE "{name}"')
    url = to_async_url(replace_database(server, name))
    try:
        engine = create_engine(url, pool_size=1)
        await migrations.upgrade(engine)
        await engine.dispose()
        rng = random.Random(args.seed)
        orgs = organisations(args.entities, rng)
        await seed_entities(url, orgs, analyze=not args.stale_statistics)
        with_items = episodes(args.episodes, orgs, args.named, rng)
        without_items = episodes(args.episodes, orgs, args.named, rng)
        settings = Settings(
            database_url=url,
            migrate_on_start=False,
            auth_disabled=True,
            auto_links=AutoLinkSettings(mentions=True),
            jobs=JobSettings(worker_enabled=False, scheduler_enabled=False),
        )
        app = create_app(settings)
        elapsed = {True: 0.0, False: 0.0}
        statement = [0.0]
        linking = mention_service.mention_rows.link_mentions

        async def timed(*args: Any, **kwargs: Any) -> int:
            began = time.perf_counter()
            try:
                return await linking(*args, **kwargs)
            finally:
                statement[0] += time.perf_counter() - began

        mention_service.mention_rows.link_mentions = timed  # type: ignore[assignment]
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(
                transport=transport, base_url="http://127.0.0.1", timeout=900
            ) as http:
                # Warm the model and the statements on both paths before timing.
                for mentions in (True, False):
                    app.state.settings.auto_links.mentions = mentions
                    warm = episodes(args.batch, orgs, args.named, random.Random(0))
                    (await http.post("/v1/episodes/batch", json={"items": warm})).raise_for_status()
                statement[0] = 0.0
                for index, start in enumerate(range(0, args.episodes, args.batch)):
                    order = (True, False) if index % 2 == 0 else (False, True)
                    for mentions in order:
                        items = with_items if mentions else without_items
                        chunk = items[start : start + args.batch]
                        app.state.settings.auto_links.mentions = mentions
                        began = time.perf_counter()
                        response = await http.post("/v1/episodes/batch", json={"items": chunk})
                        elapsed[mentions] += time.perf_counter() - began
                        response.raise_for_status()
        connection = await asyncpg.connect(url.replace("postgresql+asyncpg", "postgresql"))
        links = await connection.fetchval(
            "SELECT count(*) FROM memory_links WHERE relation = 'mentions'"
        )
        await connection.close()
        cost = elapsed[True] - elapsed[False]
        print(
            "| episodes a side | entities (aliases) | batch | without mentions | "
            "with mentions | difference | mention statement | mention links |"
        )
        print("|---|---|---|---|---|---|---|---|")
        print(
            f"| {args.episodes} | {args.entities} ({2 * args.entities}) | {args.batch} "
            f"| {elapsed[False]:.1f} s ({args.episodes / elapsed[False]:.0f}/s) "
            f"| {elapsed[True]:.1f} s ({args.episodes / elapsed[True]:.0f}/s) "
            f"| {cost:+.1f} s ({100 * cost / elapsed[False]:+.1f}%) "
            f"| {statement[0]:.2f} s ({100 * statement[0] / elapsed[False]:.1f}%) "
            f"| {links} |",
            flush=True,
        )
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=10_000, help="episodes a side")
    parser.add_argument("--entities", type=int, default=1_000)
    parser.add_argument(
        "--named", type=float, default=0.3, help="share of episodes that name an organisation"
    )
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--stale-statistics",
        action="store_true",
        help="skip ANALYZE after seeding the entities (the worst case)",
    )
    parser.add_argument(
        "--pgdata",
        type=Path,
        default=Path(".bench-pg"),
        help="the embedded PostgreSQL's data directory",
    )
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
