"""related_to links from a new fact or rule to its nearest facts and rules, in one statement."""

import uuid
from dataclasses import dataclass

from sqlalchemy import bindparam, text
from sqlalchemy.ext.asyncio import AsyncSession

from app.embedding.vectors import EmbeddingVector
from app.models.vector import Vector

# Each branch is a nearest-neighbour scan of one table's vector index (ORDER BY distance
# LIMIT), so the statement reads at most 2 * :max_links candidates whatever the tenant's size.
# Only live memories of the scope are candidates: active facts, rules not forgotten.
_LINK_NEAREST = text("""
INSERT INTO memory_links (tenant_id, source_type, source_id, target_type, target_id,
                          relation, strength)
SELECT :tenant_id, :source_type, :source_id, near.memory_type, near.id, 'related_to',
       LEAST(near.similarity, 1.0)
FROM (
    SELECT memory_type, id, similarity FROM (
        (SELECT 'fact' AS memory_type, f.id, 1 - (f.embedding <=> :vector) AS similarity
         FROM facts AS f
         WHERE f.tenant_id = :tenant_id AND f.scope = :scope AND f.validity = 'active'
           AND f.id <> :source_id AND f.embedding IS NOT NULL
         ORDER BY f.embedding <=> :vector
         LIMIT :max_links)
        UNION ALL
        (SELECT 'rule', r.id, 1 - (r.embedding <=> :vector)
         FROM rules AS r
         WHERE r.tenant_id = :tenant_id AND r.scope = :scope AND r.forgotten_at IS NULL
           AND r.id <> :source_id AND r.embedding IS NOT NULL
         ORDER BY r.embedding <=> :vector
         LIMIT :max_links)
    ) AS candidates
    WHERE similarity >= :threshold
    ORDER BY similarity DESC, memory_type, id
    LIMIT :max_links
) AS near
ON CONFLICT DO NOTHING
RETURNING target_type, target_id, strength
""").bindparams(bindparam("vector", type_=Vector()))


@dataclass(frozen=True)
class Linked:
    """A memory a new one was linked to, and their cosine similarity."""

    memory_type: str
    memory_id: uuid.UUID
    similarity: float


async def link_nearest(
    session: AsyncSession,
    *,
    tenant_id: str,
    source_type: str,
    source_id: uuid.UUID,
    scope: str,
    vector: EmbeddingVector,
    threshold: float,
    max_links: int,
) -> list[Linked]:
    """Link the memory to at most `max_links` live facts and rules of its tenant and scope
    whose cosine similarity to `vector` is at least `threshold`, the nearest first."""
    result = await session.execute(
        _LINK_NEAREST,
        {
            "tenant_id": tenant_id,
            "source_type": source_type,
            "source_id": source_id,
            "scope": scope,
            "vector": vector,
            "threshold": threshold,
            "max_links": max_links,
        },
    )
    return [Linked(row.target_type, row.target_id, float(row.strength)) for row in result]
