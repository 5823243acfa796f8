"""Re-embed every memory (and its passages) whose vectors were made by another model."""

from collections import defaultdict

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.embedding import SYSTEM_TENANT, Embedder
from app.models import Episode, Fact, Rule
from app.repositories import embedding_versions as embedding_version_rows
from app.repositories import reembed as reembed_rows
from app.services.embeddings import Embedded, embed_texts, store_passages

BATCH_SIZE = 256


async def reembed_all(sessionmaker: async_sessionmaker[AsyncSession],
                      embedder: Embedder) -> dict[str, int]:
    """Re-embed stale rows of every memory table, one committed batch at a time; a row's
    passages are made anew from its content."""
    async with sessionmaker() as session, session.begin():
        version_id = await embedding_version_rows.ensure_version(
            session, model_name=embedder.model_name, model_version=embedder.model_version,
            dimensions=embedder.dimensions)
    counts: dict[str, int] = {}
    for name, memory_type, model in (("episodes", "episode", Episode),
                                     ("facts", "fact", Fact), ("rules", "rule", Rule)):
        counts[name] = 0
        while True:
            async with sessionmaker() as session, session.begin():
                rows = await reembed_rows.stale_rows(session, model, version_id=version_id,
                                                     limit=BATCH_SIZE)
                if not rows:
                    break
                embedded = await embed_texts(session, embedder,
                                             [content for _, _, content in rows],
                                             tenant_id=SYSTEM_TENANT)
                await reembed_rows.store_vectors(
                    session, model, version_id=embedded.version_id,
                    vectors={row_id: vector for (row_id, _, _), vector
                             in zip(rows, embedded.vectors, strict=True)})
                by_tenant: dict[str, list[int]] = defaultdict(list)
                for index, (_, tenant_id, _) in enumerate(rows):
                    by_tenant[tenant_id].append(index)
                for tenant_id, indexes in by_tenant.items():
                    await store_passages(
                        session, memory_type, tenant_id=tenant_id,
                        memory_ids=[rows[i][0] for i in indexes], replace=True,
                        embedded=Embedded([embedded.vectors[i] for i in indexes],
                                          embedded.version_id,
                                          [embedded.passages[i] for i in indexes]))
                counts[name] += len(rows)
    return counts
