"""Keys limited to butlers, for the tests: mint one and open an HTTP client with it."""

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack
from typing import Any

import httpx
import pytest

from app.core.scope import SYSTEM, scoped_transaction
from app.services import api_keys


async def mint_limited_key(
    app: Any, tenant_id: str, butlers: list[str], *, access: str = "write"
) -> str:
    """A live key of `tenant_id` limited to `butlers`; its secret."""
    async with scoped_transaction(app.state.sessionmaker, SYSTEM) as session:
        minted = await api_keys.create_key(
            session, tenant_id=tenant_id, butlers=butlers, access=access
        )
    return minted.secret


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
