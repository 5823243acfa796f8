"""Honest errors: 503 + Retry-After only when the database cannot be reached; every other
failure is a logged 500 carrying the request id."""

import logging

import asyncpg
import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from app.routers import stats as stats_router
from tests.support.database import terminate_backend


def _failing(exc):
    async def fail(*args, **kwargs):
        raise exc

    return fail


async def _bad_sql(session, **kwargs):
    await session.execute(text("SELECT no_such_column FROM episodes"))


async def test_statement_error_is_500_with_request_id_not_503(client, monkeypatch, caplog):
    monkeypatch.setattr(stats_router, "memory_stats", _bad_sql)
    with caplog.at_level(logging.ERROR):
        response = await client.get("/v1/stats", headers={"X-Request-ID": "req-42"})
    assert response.status_code == 500
    assert "Retry-After" not in response.headers
    body = response.json()
    assert (body["title"], body["request_id"]) == ("Internal error", "req-42")
    assert response.headers["X-Request-ID"] == "req-42"
    assert any("req-42" in record.getMessage() for record in caplog.records)


async def test_unexpected_exception_is_500_with_generated_request_id(client, monkeypatch, caplog):
    monkeypatch.setattr(stats_router, "memory_stats", _failing(KeyError("bug")))
    with caplog.at_level(logging.ERROR):
        response = await client.get("/v1/stats")
    assert response.status_code == 500
    assert response.headers["content-type"] == "application/problem+json"
    request_id = response.headers["X-Request-ID"]
    assert len(request_id) >= 16 and response.json()["request_id"] == request_id
    assert [r for r in caplog.records if request_id in r.getMessage()]


@pytest.mark.parametrize(
    "exc",
    [
        ConnectionRefusedError(111, "Connection refused"),
        OSError(104, "Connection reset by peer"),
        PoolTimeout("QueuePool limit reached"),
        DBAPIError(
            "SELECT 1",
            {},
            asyncpg.exceptions.ConnectionDoesNotExistError(
                "connection was closed in the middle of operation"
            ),
        ),
        DBAPIError("SELECT 1", {}, asyncpg.exceptions.InterfaceError("connection is closed")),
    ],
    ids=["refused", "reset", "pool-timeout", "does-not-exist", "interface"],
)
async def test_connection_failure_is_503_with_retry_after(client, monkeypatch, exc):
    monkeypatch.setattr(stats_router, "memory_stats", _failing(exc))
    response = await client.get("/v1/stats")
    assert response.status_code == 503
    assert int(response.headers["Retry-After"]) > 0
    assert response.json()["request_id"] == response.headers["X-Request-ID"]


async def test_backend_killed_mid_request_is_503(client, monkeypatch, db_engine):
    async def killed(session, **kwargs):
        pid = (await session.execute(text("SELECT pg_backend_pid()"))).scalar_one()
        await terminate_backend(db_engine, pid)
        await session.execute(text("SELECT 1"))

    monkeypatch.setattr(stats_router, "memory_stats", killed)
    response = await client.get("/v1/stats")
    assert response.status_code == 503
    assert "Retry-After" in response.headers
    monkeypatch.undo()
    assert (await client.get("/v1/stats")).status_code == 200


async def test_every_answer_echoes_a_sane_request_id(client):
    ok = await client.get("/v1/stats", headers={"X-Request-ID": "abc-123"})
    assert ok.headers["X-Request-ID"] == "abc-123"
    odd = await client.get("/v1/stats", headers={"X-Request-ID": "bad id\twith spaces"})
    assert odd.headers["X-Request-ID"] != "bad id\twith spaces"
    missing = await client.get("/v1/facts/00000000-0000-0000-0000-000000000000")
    assert missing.status_code == 404
    assert missing.json()["request_id"] == missing.headers["X-Request-ID"]
