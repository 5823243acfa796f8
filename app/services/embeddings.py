"""Embedding of memory text together with the embedding_versions bookkeeping."""

from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from app.embedding import Embedder
from app.repositories import embedding_versions as embedding_version_rows


@dataclass(frozen=True)
class Embedded:
    """Vectors for a list of texts and the embedding_versions row that made them."""

    vectors: list[list[float]]
    version_id: int


# embedding_versions ids by (database URL, model name, model version, dimensions): each
# process looks a model's row up once per database.
_version_ids: dict[tuple[str, str, str, int], int] = {}


async def embed_texts(session: AsyncSession, embedder: Embedder, texts: list[str], *,
                      tenant_id: str) -> Embedded:
    """Embed `texts` in one batch off the event loop, then find the model version's id.

    The model runs before this function touches the database, so a caller that has not run
    SQL yet holds no connection while it waits. The model serves `tenant_id` in its turn.
    """
    vectors = await embedder.aembed_batch(list(texts), tenant_id=tenant_id)
    return Embedded(vectors, await _version_id(session, embedder))


async def _version_id(session: AsyncSession, embedder: Embedder) -> int:
    bind = session.bind
    engine = bind if isinstance(bind, AsyncEngine) or bind is None else bind.engine
    key = (str(engine.url) if engine is not None else "", embedder.model_name,
           embedder.model_version, embedder.dimensions)
    if key not in _version_ids:
        _version_ids[key] = await embedding_version_rows.ensure_version(
            session, model_name=embedder.model_name, model_version=embedder.model_version,
            dimensions=embedder.dimensions)
    return _version_ids[key]
