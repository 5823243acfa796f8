"""A search's query vector, encoded while its transaction begins."""

import asyncio

from sqlalchemy.ext.asyncio import AsyncSession

from app.config import RetrievalSettings
from app.embedding import Embedder
from app.embedding.vectors import EmbeddingVector
from app.retrieval.candidates import configure_vector_scan


async def query_vector(session: AsyncSession, embedder: Embedder, query: str, *,
                       tenant_id: str, retrieval: RetrievalSettings,
                       depth: int) -> EmbeddingVector:
    """The vector of `query`, with the transaction set for vector scans `depth` deep.

    When the model is idle, the session's transaction begins beside the model call (its
    connection, liveness check and settings cost no time of their own); when calls are
    queued, it begins after, so a request waiting for the model holds no connection.
    """
    await configure_vector_scan(session, ef_search=max(retrieval.hnsw_ef_search, depth),
                                max_scan_tuples=retrieval.hnsw_max_scan_tuples)
    if not embedder.idle:
        return await embedder.aembed(query, tenant_id=tenant_id)
    encoding = asyncio.ensure_future(embedder.aembed(query, tenant_id=tenant_id))
    try:
        await session.connection()
    except BaseException:
        encoding.cancel()
        raise
    return await encoding
