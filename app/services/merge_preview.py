"""What merging one entity into another would do, shown before anyone confirms it."""

import uuid
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from app.core.errors import Conflict, NotFound
from app.models import Entity, Fact
from app.repositories import entities as entity_rows
from app.services.merge import check_mergeable, entity_aliases, fact_contests


@dataclass(frozen=True)
class MergePreview:
    """The two entities, the source's active facts that move, the contests (winner, loser)
    the merge decides by confidence, and the aliases the target gains."""

    target: Entity
    source: Entity
    moving: list[Fact]
    contests: list[tuple[Fact, Fact]]
    aliases_added: list[str]


async def preview_merge(
    session: AsyncSession, *, tenant_id: str, target_id: uuid.UUID, source_id: uuid.UUID
) -> MergePreview:
    """The merge's outcome as `merge_entities` would decide it now; nothing is changed."""
    check_mergeable(target_id, source_id)
    target = await entity_rows.get(session, tenant_id=tenant_id, entity_id=target_id)
    source = await entity_rows.get(session, tenant_id=tenant_id, entity_id=source_id)
    if target is None:
        raise NotFound(f"entity {target_id} not found")
    if source is None:
        raise NotFound(f"entity {source_id} not found", field="source_id")
    for entity in (source, target):
        if entity.merged_into_id is not None:
            raise Conflict(f"entity {entity.id} was already merged into {entity.merged_into_id}")
    moving, contests = await fact_contests(
        session, tenant_id=tenant_id, target_id=target_id, source_id=source_id
    )
    _, added = entity_aliases(target, source)
    return MergePreview(target, source, moving, contests, added)
