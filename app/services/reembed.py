"""Re-embed every memory whose vector was made by a different embedding model."""

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.embedding import Embedder
from app.models import Episode, Fact, Rule
from app.repositories import embedding_versions as embedding_version_rows
from app.repositories import reembed as reembed_rows
from app.scope import SYSTEM, scoped_transaction

BATCH_SIZE = 256


async def reembed_all(sessionmaker: async_sessionmaker[AsyncSession],
                      embedder: Embedder) -> dict[str, int]:
    """Re-embed stale rows of every memory table (every tenant: system work), one committed
    batch at a time."""
    async with scoped_transaction(sessionmaker, SYSTEM) as session:
        version_id = await embedding_version_rows.ensure_version(
            session, model_name=embedder.model_name, model_version=embedder.model_version,
            dimensions=embedder.dimensions)
    counts: dict[str, int] = {}
    for name, model in (("episodes", Episode), ("facts", Fact), ("rules", Rule)):
        counts[name] = 0
        while True:
            async with scoped_transaction(sessionmaker, SYSTEM) as session:
                rows = await reembed_rows.stale_rows(session, model, version_id=version_id,
                                                limit=BATCH_SIZE)
                if not rows:
                    break
                vectors = await embedder.aembed_batch([content for _, content in rows])
                await reembed_rows.store_vectors(
                    session, model, version_id=version_id,
                    vectors={row_id: vector for (row_id, _), vector in zip(rows, vectors,
                                                                           strict=True)})
                counts[name] += len(rows)
    return counts
