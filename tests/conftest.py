"""Fixtures of every test folder: a throw-away database built by the Alembic migrations, the
app, API keys, live servers."""

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import ExitStack
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from app.core.config import JobSettings, Settings
from app.core.scope import SYSTEM, scoped_transaction
from app.main import create_app
from app.postgres import migrations
from app.postgres.db import create_engine
from app.repositories.search.broad_filters import BROAD
from app.services import api_keys
from tests.support.citus import (
    cluster_suite,
    distributed,
    migrated_database,
    on_cluster,
    start_cluster,
)
from tests.support.database import (
    empty_tables,
    empty_tables_on,
    scratch_database,
    scratch_server_url,
)
from tests.support.live_server import serve_in_thread
from tests.support.paths import REPO_ROOT

pytest_plugins = ["tests.support.tools"]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On a cluster (ENGRAM_TESTS_ON_CITUS=1), only the API tests that run there."""
    if on_cluster():
        kept, left = cluster_suite(items, REPO_ROOT)
        config.hook.pytest_deselected(items=left)
        items[:] = kept


@pytest.fixture(scope="session")
async def database_url() -> AsyncIterator[str]:
    """A fresh database for this test session (DATABASE_URL's server, else an embedded one
    under .pytest-pg/), upgraded to head; dropped afterwards. With ENGRAM_TESTS_ON_CITUS=1,
    a Citus coordinator with two workers on loopback instead, the store distributed."""
    if on_cluster():
        cluster, _ = await start_cluster("engram_test_server")
        try:
            url = await migrated_database(cluster, "engram_test")
            await distributed(url)
            yield url
        finally:
            cluster.stop()
        return
    server_url = scratch_server_url(REPO_ROOT / ".pytest-pg")
    async with scratch_database(server_url, "engram_test") as url:
        engine = create_engine(url, pool_size=1)
        await migrations.upgrade(engine)
        await engine.dispose()
        yield url


@pytest.fixture(scope="session")
def settings(database_url: str) -> Settings:
    """Settings pointing at the test database."""
    # No background worker or scheduler: tests run jobs explicitly (tests/api/jobs/test_jobs*.py).
    # No inferred sessions: tests store unrelated memories seconds apart in one butler; those
    # about sessions without ids turn the gap on (the `inferred_sessions` fixture).
    return Settings(
        database_url=database_url,
        migrate_on_start=False,
        episode_session_gap_minutes=0,
        jobs=JobSettings(worker_enabled=False, scheduler_enabled=False),
        # On a cluster, a tenant's statement that does not name its tenant is an error.
        multi_shard_statements="error" if on_cluster() else "off",
    )


@pytest.fixture(scope="session")
async def app(settings: Settings) -> AsyncIterator[Any]:
    """The application with its lifespan running (engine, model loaded)."""
    application = create_app(settings)
    async with application.router.lifespan_context(application):
        yield application


@pytest.fixture(scope="session")
def db_engine(app: Any) -> AsyncEngine:
    """The owner's engine (the one migrations use), for arranging and inspecting rows of
    every tenant; requests run as the app role, which row-level security binds."""
    engine: AsyncEngine = app.state.owner_engine
    return engine


@pytest.fixture(autouse=True)
async def _clean_tables(request: pytest.FixtureRequest) -> None:
    """Empty every table before each test that uses the app, so tests never share rows."""
    if "app" not in request.fixturenames:
        return
    await empty_tables_on(request.getfixturevalue("db_engine"))
    BROAD.clear()  # what it remembers counted rows just emptied
    # Every in-process client comes from one address: each test starts with its budget.
    request.getfixturevalue("app").state.caller_limits.clear()


@pytest.fixture
async def leaves_no_rows(database_url: str) -> AsyncIterator[None]:
    """For a test that writes without the app fixture (a server of its own, the CLI): empty
    the tables after it, so no later test finds its tenants, keys or memories."""
    yield
    await empty_tables(database_url)


@pytest.fixture
def api_key_for(app: Any) -> Callable[[str], Awaitable[str]]:
    """Mint a live API key for a tenant and return its secret."""

    async def mint(tenant_id: str) -> str:
        async with scoped_transaction(app.state.sessionmaker, SYSTEM) as session:
            minted = await api_keys.create_key(session, tenant_id=tenant_id)
        return minted.secret

    return mint


@pytest.fixture(scope="session")
def live_url(settings: Settings) -> Iterator[str]:
    """The app served on a loopback port with authentication on, for the whole session; its
    base URL (the tests of the clients, the MCP server and the hooks share it)."""
    with serve_in_thread(create_app(settings)) as url:
        yield url


@pytest.fixture
def serve(settings: Settings) -> Iterator[Callable[..., str]]:
    """`serve(jobs=...)`: the app with those settings replaced, served on a loopback port
    until the test ends; its base URL."""
    with ExitStack() as stack:

        def start(**changes: Any) -> str:
            configured = settings.model_copy(update=changes)
            return stack.enter_context(serve_in_thread(create_app(configured)))

        yield start
