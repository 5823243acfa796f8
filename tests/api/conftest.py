"""Fixtures of the API tests: in-process clients of tenants of their own, SQL as the owner, MCP
sessions on the live server, keys limited to butlers, the scripted LLM, an app with a pool of
one connection."""

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import httpx
import pytest
from mcp import Client
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from app.core.config import ExportSettings, Settings
from app.core.rls import SYSTEM_SETTING
from app.main import create_app
from tests.support.butler_keys import mint_limited_key
from tests.support.llm_stub import LLMStub
from tests.support.mcp import connect


@pytest.fixture
async def tenant_client(
    app: Any, api_key_for: Callable[[str], Awaitable[str]]
) -> AsyncIterator[Callable[[str], Awaitable[httpx.AsyncClient]]]:
    """Make in-process HTTP clients, each authenticated as a tenant of its own."""
    async with AsyncExitStack() as stack:

        async def make(tenant_id: str) -> httpx.AsyncClient:
            headers = {"Authorization": f"Bearer {await api_key_for(tenant_id)}"}
            http = httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app),
                base_url="http://engram.test",
                headers=headers,
            )
            return await stack.enter_async_context(http)

        yield make


@pytest.fixture
async def client(
    tenant_client: Callable[[str], Awaitable[httpx.AsyncClient]],
) -> httpx.AsyncClient:
    """An HTTP client talking to the app in-process as tenant 'default'."""
    return await tenant_client("default")


@pytest.fixture
async def anonymous_client(app: Any) -> AsyncIterator[httpx.AsyncClient]:
    """An HTTP client that sends no API key."""
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://engram.test") as http:
        yield http


@pytest.fixture
def sql(db_engine: AsyncEngine) -> Any:
    """Run one SQL statement (for arranging timestamps or reading audit rows)."""

    async def run(statement: str, **params: Any) -> list[Any]:
        async with db_engine.begin() as conn:
            await conn.execute(
                text("SELECT set_config(:name, 'on', true)"), {"name": SYSTEM_SETTING}
            )
            result = await conn.execute(text(statement), params)
            return list(result.mappings()) if result.returns_rows else []

    return run


@pytest.fixture
def inferred_sessions(app: Any, monkeypatch: pytest.MonkeyPatch) -> float:
    """Sessions inferred for episodes without ids, with the service's default gap."""
    gap = Settings.model_fields["episode_session_gap_minutes"].default
    monkeypatch.setattr(app.state.settings, "episode_session_gap_minutes", gap)
    return float(gap)


@pytest.fixture
def mcp_url(live_url: str) -> str:
    """The live server's MCP endpoint, asking for every tool."""
    return f"{live_url}/mcp?tools=all"


@pytest.fixture
def mcp_as(mcp_url: str, api_key_for: Callable[[str], Awaitable[str]]) -> Any:
    """Connect as a tenant of its own: `async with mcp_as("acme") as client`."""

    @asynccontextmanager
    async def open_for(tenant_id: str) -> AsyncIterator[Client]:
        key = await api_key_for(tenant_id)
        async with connect(mcp_url, {"Authorization": f"Bearer {key}"}) as client:
            yield client

    return open_for


@pytest.fixture
async def limited_client(
    app: Any,
) -> AsyncIterator[Callable[[str, list[str]], Awaitable[httpx.AsyncClient]]]:
    """`await limited_client("t", ["planner"])`: a client whose key of tenant t reaches only
    those butlers."""
    async with AsyncExitStack() as stack:

        async def make(tenant_id: str, butlers: list[str]) -> httpx.AsyncClient:
            secret = await mint_limited_key(app, tenant_id, butlers)
            http = httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app),
                base_url="http://engram.test",
                headers={"Authorization": f"Bearer {secret}"},
            )
            return await stack.enter_async_context(http)

        yield make


@pytest.fixture
async def llm() -> AsyncIterator[LLMStub]:
    """A scripted OpenAI-compatible model on a loopback port."""
    stub = await LLMStub().start()
    yield stub
    await stub.stop()


@pytest.fixture
async def one_connection_app(settings: Settings) -> AsyncIterator[Any]:
    """The app with a database pool of exactly one connection, one export per tenant."""
    app = create_app(
        settings.model_copy(
            update={
                "db_pool_size": 1,
                "db_max_overflow": 0,
                "export": ExportSettings(max_per_tenant=1),
            }
        )
    )
    async with app.router.lifespan_context(app):
        yield app
