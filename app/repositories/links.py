"""memory_links: provenance edges between memories."""

import uuid

from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from app.models import MemoryLink


async def create_link(session: AsyncSession, *, tenant_id: str, source_type: str,
                      source_id: uuid.UUID, target_type: str, target_id: uuid.UUID,
                      relation: str) -> bool:
    """Insert an edge; an existing edge is left as it is. True when a row was added."""
    stmt = (
        insert(MemoryLink)
        .values(tenant_id=tenant_id, source_type=source_type, source_id=source_id,
                target_type=target_type, target_id=target_id, relation=relation)
        .on_conflict_do_nothing()
    )
    result = await session.execute(stmt)
    return bool(result.rowcount)  # type: ignore[attr-defined]
