"""Embedding of memory text together with the embedding_versions bookkeeping."""

from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from app.embedding import EmbeddingEngine
from app.repositories import embedding_versions


@dataclass(frozen=True)
class Embedded:
    """Vectors for a list of texts and the embedding_versions row that made them."""

    vectors: list[list[float]]
    version_id: int


async def embed_texts(session: AsyncSession, engine: EmbeddingEngine,
                      texts: list[str]) -> Embedded:
    """Embed `texts` in one batch off the event loop and record the model version."""
    vectors = await engine.aembed_batch(list(texts))
    version_id = await embedding_versions.ensure_version(
        session, model_name=engine.model_name, model_version=engine.model_version,
        dimensions=engine.dimensions,
    )
    return Embedded(vectors, version_id)
