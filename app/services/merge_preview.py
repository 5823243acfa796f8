"""What merging one entity into another would do, shown before anyone confirms it."""

import uuid
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from app.core.errors import Conflict, InvalidInput, NotFound
from app.models import Entity, Fact
from app.repositories import entities as entity_rows
from app.services import butler_limits
from app.services.merge import fact_contests, merge_aliases


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
    butler_limits.check_unlimited("merging entities")
    if source_id == target_id:
        raise InvalidInput("an entity cannot be merged into itself", field="source_id")
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
    _, added = merge_aliases(
        target_name=target.canonical_name,
        target_aliases=list(target.aliases),
        source_name=source.canonical_name,
        source_aliases=list(source.aliases),
    )
    return MergePreview(target, source, moving, contests, added)
