"""create_app(): lifespan, routers and exception handlers."""

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from app import migrations
from app.config import Settings
from app.db import check_extensions, create_engine, make_sessionmaker, resolve_database_url
from app.embedding import get_embedding_engine
from app.errors import add_exception_handlers
from app.routers import ROUTERS
from app.services.jobs import JobContext
from app.services.worker import BackgroundJobs

logger = logging.getLogger("engram")

DESCRIPTION = """
Engram stores and retrieves long-term memories for AI agents.

* **episodes**: raw observations from a session, short-lived (7 days by default);
* **facts**: subject/predicate/content knowledge whose confidence decays by permanence and
  which a newer fact with the same key supersedes;
* **rules**: behavioural guidance whose maturity follows helpful/harmful feedback.

Errors are RFC 9457 `application/problem+json` documents; `errors[].field` names the field.
"""


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    """Connect to PostgreSQL, apply migrations, load the embedding model; dispose at exit."""
    settings: Settings = app.state.settings
    url = await resolve_database_url(settings)
    db_engine = create_engine(url, pool_size=settings.db_pool_size)
    await check_extensions(db_engine)
    if settings.migrate_on_start:
        await migrations.upgrade(db_engine)
    embedding_engine = get_embedding_engine(settings)
    await asyncio.to_thread(embedding_engine.load)
    app.state.db_engine = db_engine
    app.state.sessionmaker = make_sessionmaker(db_engine)
    app.state.embedding_engine = embedding_engine
    background = BackgroundJobs(JobContext(app.state.sessionmaker, settings, embedding_engine))
    background.start()
    logger.info("engram ready")
    try:
        yield
    finally:
        await background.stop()
        await db_engine.dispose()


def create_app(settings: Settings | None = None) -> FastAPI:
    """Build the application; nothing connects until the lifespan starts."""
    app = FastAPI(
        title="Engram",
        version="0.1.0",
        summary="Long-term memory service for AI agents.",
        description=DESCRIPTION,
        lifespan=lifespan,
    )
    app.state.settings = settings or Settings()
    add_exception_handlers(app)
    for router in ROUTERS:
        app.include_router(router)
    return app
