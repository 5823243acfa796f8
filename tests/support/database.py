"""Throw-away PostgreSQL databases for the tests and the benchmarks."""

import os
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import asyncpg
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from app.db import replace_database, start_embedded_postgres, to_async_url, to_libpq_url


def scratch_server_url(pgdata: Path) -> str:
    """The server for throw-away databases: DATABASE_URL's, else an embedded one in `pgdata`."""
    if url := os.environ.get("DATABASE_URL"):
        return to_libpq_url(to_async_url(url))
    return start_embedded_postgres(pgdata)


@asynccontextmanager
async def scratch_database(server_url: str, prefix: str, *,
                           keep: bool = False) -> AsyncIterator[str]:
    """A new empty database on the server, yielded as an asyncpg URL and dropped afterwards."""


    name = f"{prefix}_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    admin = await asyncpg.connect(server_url)
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
        try:
            yield to_async_url(replace_database(server_url, name))
        finally:
            if not keep:
                await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await admin.close()


async def terminate_backend(owner: AsyncEngine, pid: int) -> None:
    """Kill the server process `pid` as the database's owner (a request's role may not
    signal a backend it switched from), as a crash or a restart would."""
    async with owner.connect() as conn:
        await conn.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
