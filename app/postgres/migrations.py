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

from app.core.rls import SYSTEM_SETTING

# A wheel carries the revisions as app/_alembic (setup.py copies them); an editable install
# or a checkout runs them from the top-level alembic/ directory.
APP_DIR = Path(__file__).resolve().parent.parent
PACKAGED_ALEMBIC_DIR = APP_DIR / "_alembic"
SOURCE_ALEMBIC_DIR = APP_DIR.parent / "alembic"
# The advisory lock every migration run holds for its session, so replicas starting
# together apply the revisions one after the other: the second finds the schema at head.
MIGRATION_LOCK_KEY = 0x656E6772616D  # "engram"
# How often a run that found the lock taken asks again. It never waits inside PostgreSQL: a
# statement blocked on the lock holds a snapshot, which the holder's CREATE INDEX
# CONCURRENTLY waits for, and the deadlock detector would end one of the two.
LOCK_POLL_SECONDS = 0.25
# Functions the revisions mark LEAKPROOF (mem_012, mem_025, mem_035), so that under row-level
# security a condition on them may use an index: entity name and alias lookups, metadata and
# tags containment filters. Only a superuser may mark them; the mark lives in the database's
# catalog, so a pg_upgrade or a dump restored into a new cluster loses it.
LEAKPROOF_FUNCTIONS = (
    "pg_catalog.lower(text)",
    "pg_catalog.arraycontains(anyarray, anyarray)",
    "pg_catalog.jsonb_contains(jsonb, jsonb)",
    "engram_lower_aliases(text[])",
    "engram_trigrams(text)",
    "similarity_op(text, text)",
    "word_similarity_commutator_op(text, text)",
)
UNMARKED_SQL = text("""
    SELECT signature FROM unnest(CAST(:signatures AS text[])) AS signature
    JOIN pg_proc ON pg_proc.oid = to_regprocedure(signature)
    WHERE NOT pg_proc.proleakproof""")

logger = logging.getLogger(__name__)


def script_location() -> Path:
    """The directory holding env.py and versions/: the installed package's, else the source's."""
    for candidate in (PACKAGED_ALEMBIC_DIR, SOURCE_ALEMBIC_DIR):
        if (candidate / "env.py").is_file():
            return candidate
    raise FileNotFoundError(
        f"no Alembic revisions in {PACKAGED_ALEMBIC_DIR} or {SOURCE_ALEMBIC_DIR}"
    )


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


async def restore_leakproof_marks(engine: AsyncEngine) -> list[str]:
    """Mark LEAKPROOF again the functions the revisions marked, where the mark was lost; the
    signatures still unmarked (the role is not a superuser), each named in a warning."""
    async with engine.begin() as conn:
        unmarked = list(
            (await conn.execute(UNMARKED_SQL, {"signatures": list(LEAKPROOF_FUNCTIONS)})).scalars()
        )
        if not unmarked:
            return []
        superuser = (
            await conn.execute(text("SELECT rolsuper FROM pg_roles WHERE rolname = current_user"))
        ).scalar_one()
        if superuser:
            for signature in unmarked:
                await conn.execute(text(f"ALTER FUNCTION {signature} LEAKPROOF"))
            logger.info(
                "marked LEAKPROOF again (lost, as after a pg_upgrade or a restore): %s",
                ", ".join(unmarked),
            )
            return []
    logger.warning(
        "not a superuser: %s not LEAKPROOF, so under row-level security entity name and alias "
        "lookups and metadata or tags filters read every row of the tenant instead of using "
        "their indexes (correct, only slower). A superuser can mark them by starting Engram "
        "once as the owner, or with ALTER FUNCTION ... LEAKPROOF (docs/operations.md).",
        ", ".join(unmarked),
    )
    return unmarked


def create_index_concurrently(name: str, definition: str, *, unique: bool = False) -> None:
    """In a revision: build index `name` (`definition`: `ON table ...`) without blocking writes
    to a table that may be large. The revision's statements before it are committed first; an
    invalid index left by an interrupted build is dropped and built again."""
    from alembic import op

    with op.get_context().autocommit_block():
        op.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {name}")
        op.execute(f"CREATE {'UNIQUE ' if unique else ''}INDEX CONCURRENTLY {name} {definition}")


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

    # Each revision runs in a transaction of its own (alembic/env.py), so one may build an
    # index CONCURRENTLY between two (`autocommit_block`): the lock and the setting are the
    # session's, dropped before the connection goes back to the pool.
    async with engine.connect() as conn:
        while not (
            await conn.execute(
                text("SELECT pg_try_advisory_lock(:key)"), {"key": MIGRATION_LOCK_KEY}
            )
        ).scalar_one():
            await conn.commit()
            await asyncio.sleep(LOCK_POLL_SECONDS)
        try:
            # Revisions that move data work across tenants (row-level security, app/core/rls.py).
            await conn.execute(
                text("SELECT set_config(:name, 'on', false)"), {"name": SYSTEM_SETTING}
            )
            await conn.commit()
            await conn.run_sync(run_with)
            await conn.commit()
        finally:
            await conn.rollback()
            await conn.execute(
                text("SELECT set_config(:name, '', false), pg_advisory_unlock(:key)"),
                {"name": SYSTEM_SETTING, "key": MIGRATION_LOCK_KEY},
            )
            await conn.commit()
