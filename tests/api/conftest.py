"""Fixtures of the API tests: MCP sessions on the live server, keys limited to butlers, the
scripted LLM, an app with a pool of one connection."""

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AsyncExitStack, ExitStack, asynccontextmanager
from typing import Any

import httpx
import pytest
from mcp import Client

from app.core.config import ExportSettings, Settings
from app.main import create_app
from app.postgres.db import to_libpq_url
from tests.support.butler_keys import mint_limited_key
from tests.support.database import scratch_database
from tests.support.embeddings_stub import EmbeddingsStub, embeddings_stub
from tests.support.llm_stub import LLMStub
from tests.support.mcp import connect
from tests.support.model_app import remote_embedder


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


@pytest.fixture
def no_automatic_links(app: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every link is made by the test itself: no related_to or mentions links on writes."""
    monkeypatch.setattr(app.state.settings.auto_links, "enabled", False)
    monkeypatch.setattr(app.state.settings.auto_links, "mentions", False)


@pytest.fixture
async def scratch_url(database_url: str) -> AsyncIterator[str]:
    """A database of its own, empty (an app started on it migrates it), dropped afterwards."""
    async with scratch_database(to_libpq_url(database_url), "engram_scratch") as url:
        yield url


@pytest.fixture
def remote_model(
    app: Any, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable[..., EmbeddingsStub]]:
    """`stub = remote_model(write_wait_seconds=1.0, **endpoint)`: the app's model replaced,
    until the test ends, by an endpoint of the schema's width (two attempts a request unless
    `endpoint` says); `query_embedding_seconds` sets the searches' budget too."""
    shipped = app.state.embedder
    with ExitStack() as stack:

        def replace(
            *,
            write_wait_seconds: float,
            query_embedding_seconds: float | None = None,
            **endpoint: Any,
        ) -> EmbeddingsStub:
            if query_embedding_seconds is not None:
                retrieval = app.state.settings.retrieval
                monkeypatch.setattr(retrieval, "query_embedding_seconds", query_embedding_seconds)
            running = stack.enter_context(embeddings_stub(dimensions=384))
            embedder = remote_embedder(
                running, **{"max_attempts": 2, "backoff_seconds": 0.01, **endpoint}
            )
            embedder.write_wait_seconds = write_wait_seconds
            app.state.embedder = embedder
            stack.callback(embedder.close)
            stack.callback(setattr, app.state, "embedder", shipped)
            stack.callback(setattr, running, "standing", None)
            return running

        yield replace
