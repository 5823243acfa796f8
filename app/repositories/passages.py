"""SQL of passages: storing and replacing the embedded windows of long memories."""

import uuid
from collections.abc import Sequence
from typing import Any

from sqlalchemy import bindparam, delete, insert
from sqlalchemy.ext.asyncio import AsyncSession

from app.models import Passage
from app.models.passages import OWNER_COLUMNS


async def insert_passages(
    session: AsyncSession, memory_type: str, rows: Sequence[dict[str, Any]]
) -> None:
    """Insert passages of memories of one type; each row names its memory as `memory_id`."""
    if not rows:
        return
    # RETURNING makes SQLAlchemy send the rows as multi-row statements, not one per row.
    stmt = (
        insert(Passage)
        .values({OWNER_COLUMNS[memory_type]: bindparam("memory_id")})
        .returning(Passage.id)
    )
    await session.execute(stmt, rows)


async def delete_passages(
    session: AsyncSession,
    memory_type: str,
    *,
    tenant_id: str,
    memory_ids: Sequence[uuid.UUID],
    kind: str | None = None,
) -> None:
    """Delete every passage of the tenant's given memories (only those of `kind`, when given)."""
    if memory_ids:
        owner = getattr(Passage, OWNER_COLUMNS[memory_type])
        of_kind = [Passage.kind == kind] if kind is not None else []
        await session.execute(
            delete(Passage).where(
                Passage.tenant_id == tenant_id, owner.in_(list(memory_ids)), *of_kind
            )
        )
