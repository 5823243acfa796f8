"""entities: the identity registry."""

import uuid

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from app.models import Entity


async def get(session: AsyncSession, *, tenant_id: str, entity_id: uuid.UUID) -> Entity | None:
    """One entity of the tenant, tombstoned or not."""
    stmt = select(Entity).where(Entity.id == entity_id, Entity.tenant_id == tenant_id)
    return (await session.execute(stmt)).scalar_one_or_none()
