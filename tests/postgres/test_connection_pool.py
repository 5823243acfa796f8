"""Pooled connections: checked for liveness after they sat idle, handed out unchecked when
the previous request just gave them back."""

import asyncio
from collections.abc import AsyncIterator

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine

from app.postgres import db
from tests.support.database import terminate_backend

PID = text("SELECT pg_backend_pid()")


@pytest.fixture
async def one_connection(database_url: str) -> AsyncIterator[AsyncEngine]:
    """An engine whose pool holds a single connection, so every checkout reuses it."""
    engine = db.create_engine(database_url, pool_size=1, max_overflow=0)
    yield engine
    await engine.dispose()


async def _pid(engine: AsyncEngine) -> int:
    async with engine.connect() as conn:
        return int((await conn.execute(PID)).scalar_one())


async def test_a_connection_that_died_while_idle_is_replaced(
    one_connection, db_engine, monkeypatch
):
    monkeypatch.setattr(db, "LIVENESS_BYPASS_SECONDS", 0.05)
    pid = await _pid(one_connection)
    await terminate_backend(db_engine, pid)
    await asyncio.sleep(0.1)
    assert await _pid(one_connection) != pid


async def test_a_connection_given_back_just_now_is_reused_unchecked(
    one_connection, db_engine, monkeypatch
):
    """The price of skipping the check: a connection that died within the window fails its
    next statement once (a 503 through the API); the one after gets a new connection."""
    monkeypatch.setattr(db, "LIVENESS_BYPASS_SECONDS", 60)
    pid = await _pid(one_connection)
    assert await _pid(one_connection) == pid
    await terminate_backend(db_engine, pid)
    with pytest.raises(DBAPIError):
        await _pid(one_connection)
    assert await _pid(one_connection) != pid
