"""Embedding of memory text together with the embedding_versions bookkeeping."""

from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from app.embedding import Embedder
from app.repositories import embedding_versions as embedding_version_rows


@dataclass(frozen=True)
class Embedded:
    """Vectors for a list of texts and the embedding_versions row that made them."""

    vectors: list[list[float]]
    version_id: int


async def embed_texts(session: AsyncSession, embedder: Embedder,
                      texts: list[str]) -> Embedded:
    """Embed `texts` in one batch off the event loop and record the model version."""
    vectors = await embedder.aembed_batch(list(texts))
    version_id = await embedding_version_rows.ensure_version(
        session, model_name=embedder.model_name, model_version=embedder.model_version,
        dimensions=embedder.dimensions,
    )
    return Embedded(vectors, version_id)
