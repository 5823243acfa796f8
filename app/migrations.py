"""Run the Alembic revisions from inside the service, the CLI and the tests."""

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import text
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncEngine

from app.rls import SYSTEM_SETTING

# A wheel carries the revisions as app/_alembic (setup.py copies them); an editable install
# or a checkout runs them from the top-level alembic/ directory.
PACKAGED_ALEMBIC_DIR = Path(__file__).resolve().parent / "_alembic"
SOURCE_ALEMBIC_DIR = Path(__file__).resolve().parent.parent / "alembic"
# The advisory lock every migration run holds for its session, so replicas starting
# together apply the revisions one after the other: the second finds the schema at head.
MIGRATION_LOCK_KEY = 0x656E6772616D  # "engram"
LOCK_POLL_SECONDS = 0.2


def script_location() -> Path:
    """The directory holding env.py and versions/: the installed package's, else the source's."""
    for candidate in (PACKAGED_ALEMBIC_DIR, SOURCE_ALEMBIC_DIR):
        if (candidate / "env.py").is_file():
            return candidate
    raise FileNotFoundError(
        f"no Alembic revisions in {PACKAGED_ALEMBIC_DIR} or {SOURCE_ALEMBIC_DIR}")


def alembic_config() -> Config:
    """An Alembic Config that does not depend on the working directory."""
    config = Config()
    config.set_main_option("script_location", str(script_location()))
    config.attributes["skip_logging_config"] = True
    return config


async def upgrade(engine: AsyncEngine, revision: str = "head") -> None:
    """Upgrade the schema to `revision`."""
    await _run(engine, lambda config: command.upgrade(config, revision))


async def downgrade(engine: AsyncEngine, revision: str = "base") -> None:
    """Downgrade the schema to `revision`."""
    await _run(engine, lambda config: command.downgrade(config, revision))


async def is_at_head(engine: AsyncEngine) -> bool:
    """True when the database's revision is the newest one shipped."""
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    async with engine.connect() as conn:
        current = await conn.run_sync(
            lambda sync_conn: MigrationContext.configure(sync_conn).get_current_revision()
        )
    return current == head


def quiet_alembic() -> None:
    """Alembic's per-revision INFO lines are detail: shown only when debugging."""
    if not logging.getLogger("engram").isEnabledFor(logging.DEBUG):
        logging.getLogger("alembic").setLevel(logging.WARNING)


async def _run(engine: AsyncEngine, action: Callable[[Config], None]) -> None:
    quiet_alembic()

    def run_with(connection: Connection) -> None:
        config = alembic_config()
        config.attributes["connection"] = connection
        action(config)

    async with engine.connect() as conn:
        # Held for the session, not a transaction: each revision commits on its own, and one
        # that builds an index concurrently commits what came before it. Tried, not waited
        # for: a statement waiting on the lock would be a transaction that index waits for.
        while not (await conn.execute(text("SELECT pg_try_advisory_lock(:key)"),
                                      {"key": MIGRATION_LOCK_KEY})).scalar_one():
            await conn.commit()
            await asyncio.sleep(LOCK_POLL_SECONDS)
        # Revisions that move data work across tenants (row-level security, app/rls.py).
        await conn.execute(text("SELECT set_config(:name, 'on', false)"),
                           {"name": SYSTEM_SETTING})
        await conn.commit()
        try:
            await conn.run_sync(run_with)
            await conn.commit()
        finally:
            await conn.rollback()
            await conn.execute(text("SELECT set_config(:name, '', false), "
                                    "pg_advisory_unlock(:key)"),
                               {"name": SYSTEM_SETTING, "key": MIGRATION_LOCK_KEY})
            await conn.commit()
