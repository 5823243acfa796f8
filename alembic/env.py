"""Alembic environment: runs the revisions over an async connection."""

import asyncio
from logging.config import fileConfig

from alembic import context
from sqlalchemy.engine import Connection

from app.core.config import Settings
from app.models import Base
from app.postgres.db import create_engine, resolve_database_url

config = context.config
if config.config_file_name is not None and not config.attributes.get("skip_logging_config"):
    fileConfig(config.config_file_name, disable_existing_loggers=False)

target_metadata = Base.metadata


def _run(connection: Connection) -> None:
    # A transaction per revision: one that builds an index CONCURRENTLY commits those before it.
    context.configure(
        connection=connection, target_metadata=target_metadata, transaction_per_migration=True
    )
    with context.begin_transaction():
        context.run_migrations()


async def _run_async() -> None:
    url = config.attributes.get("database_url") or await resolve_database_url(Settings())
    engine = create_engine(url, pool_size=1)
    try:
        async with engine.connect() as connection:
            await connection.run_sync(_run)
    finally:
        await engine.dispose()


def run_migrations_online() -> None:
    """Run the revisions; reuse a connection when the caller passed one in."""
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
    else:
        asyncio.run(_run_async())


if context.is_offline_mode():
    raise SystemExit("Engram's migrations run online only: `engram migrate`.")
run_migrations_online()
