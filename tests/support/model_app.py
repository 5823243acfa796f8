"""The app started on a database of its own with an embedder of the test's choosing."""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest

from app import main
from app.core.config import JobSettings, Settings
from app.core.scope import SYSTEM, scoped_transaction
from app.embedding import Embedder
from app.embedding.remote import RemoteEndpoint
from app.services import api_keys
from app.worker.reembed import EmbeddingBacklog
from tests.support.embeddings_stub import EmbeddingsStub


def remote_embedder(
    stub: EmbeddingsStub, *, query_prefix: str = "", document_prefix: str = "", **endpoint: Any
) -> Embedder:
    """The 'openai' backend on `stub`, one attempt a request unless `endpoint` says."""
    return Embedder(
        "stub-embedding",
        backend="openai",
        query_prefix=query_prefix,
        document_prefix=document_prefix,
        remote=RemoteEndpoint(**{"base_url": stub.base_url, "max_attempts": 1, **endpoint}),
    )


@asynccontextmanager
async def started(
    url: str, embedder: Embedder, monkeypatch: pytest.MonkeyPatch, **settings: Any
) -> AsyncIterator[Any]:
    """The app on `url` with `embedder` as its model and any other `settings`;
    `backlog_of(app)` is its own embedding backlog (running with a remote model)."""
    configured = Settings(
        database_url=url,
        migrate_on_start=True,
        episode_session_gap_minutes=0,
        jobs=JobSettings(worker_enabled=False, scheduler_enabled=False),
        **settings,
    )
    monkeypatch.setattr(main, "get_embedder", lambda _settings: embedder)
    made: list[EmbeddingBacklog] = []

    class Recorded(EmbeddingBacklog):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(main, "EmbeddingBacklog", Recorded)
    application = main.create_app(configured)
    try:
        async with application.router.lifespan_context(application):
            [application.state.backlog_under_test] = made
            yield application
    finally:
        embedder.close()


def backlog_of(application: Any) -> EmbeddingBacklog:
    """The embedding backlog the started app runs."""
    return application.state.backlog_under_test


@asynccontextmanager
async def client_of(application: Any) -> AsyncIterator[httpx.AsyncClient]:
    """An in-process client of `application` with a key of tenant 'dims'."""
    async with scoped_transaction(application.state.sessionmaker, SYSTEM) as session:
        key = (await api_keys.create_key(session, tenant_id="dims")).secret
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=application),
        base_url="http://engram.test",
        headers={"Authorization": f"Bearer {key}"},
    ) as http:
        yield http
