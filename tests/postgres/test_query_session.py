"""The transaction of a search route: read-only, ended after the answer is sent."""

import logging
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.requests import Request

from app.core.errors import InvalidInput
from app.deps import get_query_session
from tests.support.database import terminate_backend


@pytest.fixture
async def session_of(app: Any) -> AsyncIterator[AsyncGenerator[AsyncSession, None]]:
    """The dependency as FastAPI drives it for a request of tenant t1 (closed afterwards, so
    a failed test leaves no transaction open)."""
    request = Request({"type": "http", "app": app, "method": "POST", "headers": []})
    generator = get_query_session(request, "t1")
    yield generator
    await generator.aclose()


async def test_it_refuses_writes_from_its_first_statement(session_of):
    session = await anext(session_of)
    with pytest.raises(DBAPIError, match="read-only transaction"):
        await session.execute(text("UPDATE episodes SET content = content"))
    with pytest.raises(DBAPIError):
        await session_of.athrow(DBAPIError("UPDATE", {}, Exception("refused")))


async def test_an_error_before_the_answer_reaches_the_caller(session_of):
    session = await anext(session_of)
    await session.execute(text("SELECT count(*) FROM episodes"))
    with pytest.raises(InvalidInput):
        await session_of.athrow(InvalidInput("bad", field="query"))


async def test_a_failure_to_end_after_the_answer_is_logged_not_raised(
    session_of, db_engine, caplog
):
    """Once the answer is sent nothing can report to the caller, and a transaction that
    wrote nothing loses nothing by failing to end: the failure is logged."""
    session = await anext(session_of)
    pid = (await session.execute(text("SELECT pg_backend_pid()"))).scalar_one()
    await terminate_backend(db_engine, pid)
    with caplog.at_level(logging.WARNING, logger="app.deps"):
        with pytest.raises(StopAsyncIteration):
            await anext(session_of)
    assert "failed to end after its answer was sent" in caplog.text
