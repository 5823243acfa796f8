"""Fixtures of the tests of the service's embedding model: a database of its own, a remote
model in place of the packaged one."""

from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import ExitStack
from typing import Any

import pytest

from app.postgres.db import to_libpq_url
from tests.support.database import scratch_database
from tests.support.embeddings_stub import EmbeddingsStub, embeddings_stub
from tests.support.model_app import remote_embedder


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
