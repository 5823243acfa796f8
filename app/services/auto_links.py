"""Automatic links: a new fact or rule joins its most similar live facts and rules, and the
entities it names (`services/mentions`).

Episodes are left out: they are the high-volume, short-lived raw record (a batch may hold 500
and cleanup deletes them within days), their neighbours are their session's turns (`neighbours`
in search, context passages), and consolidation links what it distils from them.
"""

import uuid

from sqlalchemy.ext.asyncio import AsyncSession

from app.core.config import AutoLinkSettings
from app.embedding.vectors import EmbeddingVector
from app.models import Fact, Rule
from app.repositories import auto_links as auto_link_rows
from app.repositories.auto_links import Linked
from app.services.embeddings import Embedded, store_passages
from app.services.mentions import link_mentions


async def link_new(
    session: AsyncSession,
    *,
    tenant_id: str,
    memory_type: str,
    memory_id: uuid.UUID,
    scope: str,
    vector: EmbeddingVector,
    settings: AutoLinkSettings | None,
) -> list[Linked]:
    """related_to links (strength: the cosine similarity) from the new memory to the live facts
    and rules of its tenant and scope at least `settings.threshold` similar, at most
    `settings.max_links`; none when `settings` is None or disabled."""
    if settings is None or not settings.enabled:
        return []
    return await auto_link_rows.link_nearest(
        session,
        tenant_id=tenant_id,
        source_type=memory_type,
        source_id=memory_id,
        scope=scope,
        vector=vector,
        threshold=settings.threshold,
        max_links=settings.max_links,
    )


async def link_stored(
    session: AsyncSession,
    memory_type: str,
    memory: Fact | Rule,
    text: str,
    *,
    tenant_id: str,
    embedded: Embedded,
    settings: AutoLinkSettings | None,
) -> None:
    """What a new fact or rule gets once inserted: its passages, its `related_to` links
    (`link_new`, when it has a vector) and, unless `settings` leave them out, `mentions` of
    the entities `text` names."""
    await store_passages(
        session, memory_type, tenant_id=tenant_id, memory_ids=[memory.id], embedded=embedded
    )
    if (vector := embedded.vector(0)) is not None:
        await link_new(
            session,
            tenant_id=tenant_id,
            memory_type=memory_type,
            memory_id=memory.id,
            scope=memory.scope,
            vector=vector,
            settings=settings,
        )
    if settings is None or settings.mentions:
        await link_mentions(
            session, tenant_id=tenant_id, memory_type=memory_type, ids=[memory.id], texts=[text]
        )
