"""Database URL resolution, the embedded PostgreSQL, the engine and the per-request session."""

import asyncio
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from sqlalchemy import event, text
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)

from app.core.config import Settings
from app.core.rls import APP_ROLE
from app.postgres import citus, wal_archive
from app.postgres.embedded_pg import SUPERUSER, release_server, server_for, supervise

logger = logging.getLogger(__name__)

EMBEDDED_DATABASE = "engram"
REQUIRED_EXTENSIONS = ("vector", "pg_trgm")


class DatabaseConfigError(RuntimeError):
    """The configured database cannot serve Engram (unreachable or missing an extension)."""


def to_async_url(url: str) -> str:
    """Turn any postgres URL into one for SQLAlchemy's asyncpg dialect."""
    for prefix in (
        "postgresql+asyncpg://",
        "postgresql+psycopg://",
        "postgresql://",
        "postgres://",
    ):
        if url.startswith(prefix):
            return "postgresql+asyncpg://" + url[len(prefix) :]
    raise DatabaseConfigError(f"DATABASE_URL must be a postgresql:// URL, got {url.split(':')[0]}")


def start_embedded_postgres(pgdata: Path, settings: Settings | None = None) -> str:
    """Start (or join) the embedded PostgreSQL in `pgdata`, archiving WAL as `settings` say;
    a superuser libpq URL to it."""
    archive = wal_archive.archive_dir(settings) if settings is not None else None
    server = server_for(
        pgdata,
        server_dirs=(archive,) if archive is not None else (),
        extra_settings=wal_archive.server_settings(settings) if settings else None,
    )
    return server.url(SUPERUSER, "postgres")


def embedded_pgdata(settings: Settings) -> Path:
    """Where the embedded server keeps its data."""
    return settings.resolved_data_dir / "pgdata"


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
    server_url = await asyncio.to_thread(
        start_embedded_postgres, embedded_pgdata(settings), settings
    )
    return to_async_url(await ensure_database(server_url, EMBEDDED_DATABASE))


def create_engine(
    url: str,
    *,
    pool_size: int = 10,
    max_overflow: int | None = None,
    role: str | None = None,
    statement_cache_size: int = 100,
    connect_timeout: float | None = None,
    multi_shard_statements: str = "off",
) -> AsyncEngine:
    """Build the async engine; unix-socket hosts in `?host=` are passed to asyncpg.

    `max_overflow` (extra connections past `pool_size` under load) defaults to `pool_size`.
    With `role`, every connection runs as that role from its start (`SET ROLE` at login).
    `statement_cache_size` 0 sends every statement unnamed (PgBouncer's transaction mode).
    `multi_shard_statements`: on a Citus coordinator, the log level (or 'error') of a
    statement in a tenant's transaction that runs on more than one shard.
    """
    connect_args: dict[str, Any] = (
        unnamed_statements()
        if statement_cache_size == 0
        else {"statement_cache_size": statement_cache_size}
    )
    if connect_timeout is not None:
        connect_args["timeout"] = connect_timeout
    query = parse_qs(urlsplit(url).query)
    if "host" in query and query["host"][0].startswith("/"):
        connect_args["host"] = query["host"][0]
    if role is not None:
        connect_args["server_settings"] = {"role": role}
    engine = create_async_engine(
        url,
        pool_size=pool_size,
        max_overflow=pool_size if max_overflow is None else max_overflow,
        connect_args=connect_args,
        # A failing statement's error names its parameters otherwise: memory text, vectors.
        hide_parameters=True,
    )
    check_liveness_after_idle(engine)
    citus.propagate_settings(engine, multi_shard_statements)
    return engine


# A connection given back to the pool less than this long ago is taken again unchecked.
LIVENESS_BYPASS_SECONDS = 0.5
_CHECKED_IN_AT = "engram_checked_in_at"


def check_liveness_after_idle(engine: AsyncEngine) -> None:
    """Check that a pooled connection is alive before handing it out, unless it was in use
    less than `LIVENESS_BYPASS_SECONDS` ago; a dead one is replaced by a new connection.

    The check costs three round trips; searches and writes back to back would pay them on
    every request for a connection the previous request just used."""

    @event.listens_for(engine.sync_engine, "checkin")
    def _note_checkin(dbapi_connection: Any, record: Any) -> None:
        record.info[_CHECKED_IN_AT] = time.monotonic()

    @event.listens_for(engine.sync_engine, "checkout")
    def _check_liveness(dbapi_connection: Any, record: Any, proxy: Any) -> None:
        checked_in = record.info.get(_CHECKED_IN_AT)
        if checked_in is None or time.monotonic() - checked_in < LIVENESS_BYPASS_SECONDS:
            return
        try:
            dbapi_connection.ping()
        except Exception as error:  # noqa: BLE001 - any failure: the connection is dead
            raise DisconnectionError(
                f"pooled connection failed its liveness check: {error}"
            ) from error


def unnamed_statements() -> dict[str, Any]:
    """asyncpg arguments for a pooler that may give each transaction another server
    connection: no statement cache in asyncpg or SQLAlchemy, and the unnamed statement, which
    asyncpg parses again at each execution, instead of named ones that outlive a transaction."""
    return {
        "statement_cache_size": 0,
        "prepared_statement_cache_size": 0,
        "prepared_statement_name_func": lambda: "",
    }


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


@dataclass(frozen=True)
class AppConnection:
    """How requests and jobs reach the database: a URL and the role to switch to, if any."""

    url: str
    role: str | None = None


async def app_connection(
    settings: Settings, owner_engine: AsyncEngine, owner_url: str
) -> AppConnection:
    """The non-superuser connection for requests and jobs (row-level security applies).

    1. `app_database_url` when set;
    2. the embedded server: role engram_app by peer authentication;
    3. DATABASE_URL alone: its sessions switch to role engram_app (created by migration
       mem_012), which needs the URL's role to be a superuser or a member of engram_app.
    Refuses when none of them gives a role that row-level security binds.
    """
    if settings.app_database_url:
        return AppConnection(to_async_url(settings.app_database_url))
    if not settings.database_url:
        server = server_for(embedded_pgdata(settings))
        return AppConnection(to_async_url(server.url(APP_ROLE, EMBEDDED_DATABASE)))
    async with owner_engine.connect() as conn:
        can_switch = (
            await conn.execute(
                text(
                    "SELECT pg_has_role(current_user, oid, 'MEMBER') FROM pg_roles "
                    "WHERE rolname = :role"
                ),
                {"role": APP_ROLE},
            )
        ).scalar_one_or_none()
    if not can_switch:
        raise DatabaseConfigError(
            f"role {APP_ROLE} is missing or the DATABASE_URL role may not use it: create it "
            "(migration mem_012 does when it may), or set ENGRAM_APP_DATABASE_URL to a role "
            "that is not a superuser and has no BYPASSRLS"
        )
    logger.warning(
        "requests run as role %s switched to from the DATABASE_URL role; set "
        "ENGRAM_APP_DATABASE_URL to log in as a role without superuser rights",
        APP_ROLE,
    )
    return AppConnection(owner_url, role=APP_ROLE)


async def check_app_role(engine: AsyncEngine) -> None:
    """Refuse a request role that row-level security would not bind."""
    async with engine.connect() as conn:
        row = (
            await conn.execute(
                text(
                    "SELECT current_user AS name, rolsuper, rolbypassrls FROM pg_roles "
                    "WHERE rolname = current_user"
                )
            )
        ).one()
    if row.rolsuper or row.rolbypassrls:
        raise DatabaseConfigError(
            f"requests would run as {row.name}, a superuser or BYPASSRLS role: row-level "
            "security would not apply; use a plain role (see ENGRAM_APP_DATABASE_URL)"
        )


class EmbeddedSupervisor:
    """The task that restarts a dead embedded postmaster (nothing with DATABASE_URL)."""

    def __init__(self, task: "asyncio.Task[None] | None", stop_event: asyncio.Event) -> None:
        self._task = task
        self._stop = stop_event

    @classmethod
    def start_for(cls, settings: Settings) -> "EmbeddedSupervisor":
        """Supervise the embedded server when this process uses one."""
        stop_event = asyncio.Event()
        if settings.database_url:
            return cls(None, stop_event)
        server = server_for(embedded_pgdata(settings))
        task = asyncio.create_task(
            supervise(server, stop_event, interval_seconds=settings.embedded_supervise_seconds),
            name="engram-postgres-supervisor",
        )
        return cls(task, stop_event)

    async def stop(self) -> None:
        """Stop supervising (before the server itself is stopped)."""
        self._stop.set()
        if self._task is not None:
            await self._task


def release_embedded_postgres(settings: Settings) -> None:
    """This process no longer uses the embedded server; the last user stops it."""
    if not settings.database_url:
        release_server(embedded_pgdata(settings))
