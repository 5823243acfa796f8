"""Re-embed every memory (and its passages) whose vectors were made by another model, or
every memory."""

import uuid
from collections import defaultdict

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.embedding import Embedder
from app.models import Episode, Fact, Rule
from app.repositories import embedding_versions as embedding_version_rows
from app.repositories import episodes as episode_rows
from app.repositories import reembed as reembed_rows
from app.scope import SYSTEM, scoped_transaction
from app.services.embeddings import embed_texts, store_passages
from app.text import context_text

BATCH_SIZE = 256


async def reembed_all(sessionmaker: async_sessionmaker[AsyncSession], embedder: Embedder, *,
                      every: bool = False) -> dict[str, int]:
    """Re-embed stale rows of every memory table (every tenant: system work), one committed
    batch at a time; a row's passages are made anew from its content. With `every`, every
    row, stale or not (after a change of the passage or context settings)."""
    async with scoped_transaction(sessionmaker, SYSTEM) as session:
        version_id, _ = await embedding_version_rows.ensure_version(
            session, model_name=embedder.model_name, model_version=embedder.model_version,
            dimensions=embedder.dimensions)
    counts: dict[str, int] = {}
    for name, memory_type, model in (("episodes", "episode", Episode),
                                     ("facts", "fact", Fact), ("rules", "rule", Rule)):
        counts[name], after = 0, None
        while True:
            async with scoped_transaction(sessionmaker, SYSTEM) as session:
                rows = (await reembed_rows.rows_after(session, model, after=after,
                                                      limit=BATCH_SIZE) if every else
                        await reembed_rows.stale_rows(session, model, version_id=version_id,
                                                      limit=BATCH_SIZE))
                if not rows:
                    break
                by_tenant: dict[str, list[tuple[uuid.UUID, str]]] = defaultdict(list)
                for row_id, tenant_id, content in rows:
                    by_tenant[tenant_id].append((row_id, content))
                for tenant_id, tenant_rows in by_tenant.items():
                    await _reembed_rows(session, embedder, memory_type, model,
                                        tenant_id=tenant_id, rows=tenant_rows)
                counts[name] += len(rows)
                after = rows[-1][0]
    return counts


async def _reembed_rows(session: AsyncSession, embedder: Embedder, memory_type: str,
                        model: type[Episode] | type[Fact] | type[Rule], *, tenant_id: str,
                        rows: list[tuple[uuid.UUID, str]]) -> None:
    """New vectors and passages (windows, and episodes' contexts) for one tenant's rows."""
    ids = [row_id for row_id, _ in rows]
    contexts: list[str | None] = [None] * len(rows)
    if memory_type == "episode":
        before = await episode_rows.turns_before(session, tenant_id=tenant_id, ids=ids,
                                                 count=embedder.context_turns)
        contexts = [context_text(before[row_id], content) if before.get(row_id) else None
                    for row_id, content in rows]
    embedded = await embed_texts(session, embedder, [content for _, content in rows],
                                 tenant_id=tenant_id, contexts=contexts, bulk=True)
    await reembed_rows.store_vectors(
        session, model, version_id=embedded.version_id,
        vectors=dict(zip(ids, embedded.vectors, strict=True)))
    await store_passages(session, memory_type, tenant_id=tenant_id, memory_ids=ids,
                         embedded=embedded, replace=True)
