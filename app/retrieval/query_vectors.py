"""A query's vector, made by the model the store's vectors are searched with."""

import asyncio
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import TypeVar

from sqlalchemy.ext.asyncio import AsyncSession

from app.embedding import Embedder
from app.embedding.remote import RemoteEmbeddingError
from app.embedding.vectors import EmbeddingVector
from app.repositories import embedding_switches as switch_rows
from app.telemetry.stages import stage

T = TypeVar("T")


@dataclass(frozen=True)
class QueryVector:
    """A query's text and its vector, with the model that made it."""

    text: str
    tenant_id: str
    vector: EmbeddingVector
    model: Embedder


async def embed_query(embedder: Embedder, text: str, *, tenant_id: str) -> QueryVector:
    """Embed a query with the model that served the last transaction, before the query's own
    transaction reads which model it needs."""
    model = embedder.slot_hint[0]
    with stage("embed"):
        vector = await model.aembed(text, tenant_id=tenant_id)
    return QueryVector(text, tenant_id, vector, model)


async def query_within(
    embedder: Embedder, text: str, *, tenant_id: str, seconds: float
) -> tuple[QueryVector | None, str | None]:
    """The query's vector, or, with a remote model that is unavailable (or failed a few
    seconds ago) or slower than `seconds`, none and why ("unavailable", "timeout"): the
    caller then serves the query from the keyword list alone."""
    if embedder.failed_recently:
        return None, "unavailable"
    embedding = embed_query(embedder, text, tenant_id=tenant_id)
    if embedder.backend_name != "openai":
        return await embedding, None
    try:
        return await asyncio.wait_for(embedding, timeout=seconds), None
    except TimeoutError:
        return None, "timeout"
    except RemoteEmbeddingError:
        return None, "unavailable"


async def serving_query(
    session: AsyncSession, embedder: Embedder, query: QueryVector
) -> QueryVector:
    """The query as embedded by the model whose vectors the store's `embedding` columns hold
    in this transaction (which keeps them so to its end): embedded again in the rare case the
    store switched models since the query was embedded."""
    with stage("prepare"):
        slots = await switch_rows.slot_models(session, embedder, writing=False)
    if slots.serving is query.model:
        return query
    with stage("embed"):
        vector = await slots.serving.aembed(query.text, tenant_id=query.tenant_id)
    return QueryVector(query.text, query.tenant_id, vector, slots.serving)


async def serving_vector(
    session: AsyncSession, embedder: Embedder, query: QueryVector
) -> EmbeddingVector:
    """`serving_query`'s vector."""
    return (await serving_query(session, embedder, query)).vector


async def begin_serving(session: AsyncSession, embedder: Embedder) -> None:
    """Begin the session's transaction, if it has not begun, with the settings asked for so
    far, and read which model serves it (`serving_query` then sends nothing)."""
    await switch_rows.slot_models(session, embedder, writing=False)


async def while_beginning(embedding: Awaitable[T], beginning: Awaitable[object]) -> T:
    """`embedding`'s result, with `beginning` (the transaction's first statements) run
    meanwhile. What the answer waits for `beginning` past the embedding is the `prepare`
    stage; an error of the embedding wins over one of the beginning."""
    started = asyncio.ensure_future(beginning)
    try:
        result = await embedding
    finally:
        with stage("prepare"):
            await asyncio.wait([started])  # not cancelled midway: the session stays usable
        failed = started.exception()
    if failed is not None:
        raise failed
    return result
