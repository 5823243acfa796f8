"""A read-only key (`engram keys create --read-only`) reads everything its tenant holds and
changes nothing: every changing operation is a 403, generated from the route table."""

import re
from typing import Any

import httpx

from app.core.scope import SYSTEM, scoped_transaction
from app.deps import READING_POSTS
from app.services import api_keys
from tests.support.http import post
from tests.support.tenancy import v1_routes

SOME_ID = "00000000-0000-4000-8000-000000000000"


async def read_only_client(app: Any) -> httpx.AsyncClient:
    async with scoped_transaction(app.state.sessionmaker, SYSTEM) as session:
        minted = await api_keys.create_key(session, tenant_id="default", access="read")
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app),
        base_url="http://t",
        headers={"X-API-Key": minted.secret},
    )


def operation_names(app: Any) -> dict[tuple[str, str], str]:
    return {
        (method.upper(), path): operation["operationId"]
        for path, methods in app.openapi()["paths"].items()
        for method, operation in methods.items()
    }


async def test_every_changing_operation_refuses_a_read_only_key(app, client, sql):
    fact = await post(client, "/v1/facts", subject="Ann", predicate="likes", content="tea")
    before = await sql("SELECT count(*) AS n FROM memory_events")
    names = operation_names(app)
    async with await read_only_client(app) as reader:
        for method, path in v1_routes(app):
            url = re.sub(r"\{[a-z_]+\}", SOME_ID, path)
            answer = await reader.request(method, url, json={})
            reads = method == "GET" or names[(method, path)] in READING_POSTS
            assert (answer.status_code == 403) != reads, (method, path, answer.status_code)
            if answer.status_code == 403:
                assert answer.json()["detail"] == "this API key is read-only"
        assert (await reader.get(f"/v1/facts/{fact['id']}")).status_code == 200
        found = await reader.post("/v1/search", json={"query": "what does Ann like"})
        assert found.status_code == 200 and found.json()["results"]
    assert await sql("SELECT count(*) AS n FROM memory_events") == before
    assert (await client.get(f"/v1/facts/{fact['id']}")).json()["validity"] == "active"


async def test_mcp_refuses_a_read_only_key(app):
    async with await read_only_client(app) as reader:
        answer = await reader.post(
            "/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            headers={"Accept": "application/json, text/event-stream"},
        )
    assert answer.status_code == 403
    assert "read-only" in answer.json()["detail"]
