"""Fixtures for the tests on a Citus cluster: the cluster (built and started once a session),
Engram migrated to head on its coordinator, the app and a client against it."""

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.main import create_app
from tests.support.citus import (
    CitusCluster,
    app_settings,
    distributed,
    migrated_database,
    needs_citus,
    start_cluster,
    tenant_client,
)

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test here needs Citus: skipped without it (failed under
    ENGRAM_TESTS_REQUIRE_TOOLS=1)."""
    mark = None
    for item in items:
        if HERE in item.path.parents:
            mark = mark or needs_citus()
            item.add_marker(mark)


@pytest.fixture(scope="session")
async def citus_cluster() -> AsyncIterator[CitusCluster]:
    """A coordinator and two workers with database `engram` (extensions citus, vector,
    pg_trgm on every node, the workers registered)."""
    cluster, _ = await start_cluster("engram")
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
async def citus_engram_url(citus_cluster: CitusCluster) -> str:
    """Engram's database on the coordinator, migrated to head and distributed by tenant
    (`engram distribute`)."""
    url = await migrated_database(citus_cluster, "engram_app")
    await distributed(url)
    return url


@pytest.fixture(scope="session")
async def citus_app(citus_engram_url: str) -> AsyncIterator[Any]:
    """The app against the coordinator, its lifespan running; no background worker."""
    settings = app_settings(citus_engram_url)  # each tenant's statement on one worker
    application = create_app(settings)
    async with application.router.lifespan_context(application):
        yield application


@pytest.fixture
async def citus_client(citus_app: Any) -> AsyncIterator[httpx.AsyncClient]:
    """An in-process HTTP client authenticated as tenant 'citus'."""
    async with contextlib.AsyncExitStack() as stack:
        yield await tenant_client(stack, citus_app, "citus")


@pytest.fixture
async def citus_tenant_clients(citus_app: Any) -> AsyncIterator[dict[str, httpx.AsyncClient]]:
    """In-process HTTP clients of two tenants, 'ann' and 'bob', each with a key of its own."""
    async with contextlib.AsyncExitStack() as stack:
        yield {tenant: await tenant_client(stack, citus_app, tenant) for tenant in ("ann", "bob")}


@pytest.fixture
async def citus_client_of(
    citus_app: Any,
) -> AsyncIterator[Callable[[str], Awaitable[httpx.AsyncClient]]]:
    """A maker of in-process HTTP clients, each with a new key of the tenant it is given."""
    async with contextlib.AsyncExitStack() as stack:
        yield lambda tenant: tenant_client(stack, citus_app, tenant)
