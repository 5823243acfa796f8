"""memory_links: provenance edges between memories."""

import base64
import json
import uuid
from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import ColumnElement, and_, delete, func, or_, select, tuple_
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from app.errors import InvalidInput
from app.models import MemoryLink
from app.repositories.memories import MODELS


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


def _key(source_type: str, source_id: uuid.UUID, target_type: str,
         target_id: uuid.UUID) -> list[ColumnElement[bool]]:
    return [MemoryLink.source_type == source_type, MemoryLink.source_id == source_id,
            MemoryLink.target_type == target_type, MemoryLink.target_id == target_id]


async def get_link(session: AsyncSession, *, tenant_id: str, source_type: str,
                   source_id: uuid.UUID, target_type: str,
                   target_id: uuid.UUID) -> MemoryLink | None:
    """The tenant's edge from source to target, if any."""
    stmt = select(MemoryLink).where(MemoryLink.tenant_id == tenant_id,
                                    *_key(source_type, source_id, target_type, target_id))
    return (await session.execute(stmt)).scalar_one_or_none()


async def delete_link(session: AsyncSession, *, tenant_id: str, source_type: str,
                      source_id: uuid.UUID, target_type: str, target_id: uuid.UUID) -> bool:
    """Delete the tenant's edge from source to target; True when it existed."""
    stmt = delete(MemoryLink).where(MemoryLink.tenant_id == tenant_id,
                                    *_key(source_type, source_id, target_type, target_id))
    return bool((await session.execute(stmt)).rowcount)  # type: ignore[attr-defined]


async def delete_links_for(session: AsyncSession, memory_type: str, ids: Sequence[uuid.UUID],
                           *, tenant_id: str | None = None) -> int:
    """Delete every edge touching these memories (either end); returns how many went.

    Hard deletes of episodes, facts and rules already cascade to their links through the
    mem_005 trigger; this is for callers that want the count or delete links first.
    """
    if not ids:
        return 0
    touching = or_(
        and_(MemoryLink.source_type == memory_type, MemoryLink.source_id.in_(ids)),
        and_(MemoryLink.target_type == memory_type, MemoryLink.target_id.in_(ids)),
    )
    stmt = delete(MemoryLink).where(touching)
    if tenant_id is not None:
        stmt = stmt.where(MemoryLink.tenant_id == tenant_id)
    return int((await session.execute(stmt)).rowcount)  # type: ignore[attr-defined]


async def memory_exists(session: AsyncSession, *, tenant_id: str, memory_type: str,
                        memory_id: uuid.UUID) -> bool:
    """True when the tenant has this episode, fact or rule."""
    model = MODELS[memory_type]
    stmt = select(func.count()).select_from(model).where(model.id == memory_id,
                                                         model.tenant_id == tenant_id)
    return bool((await session.execute(stmt)).scalar_one())


def _encode_cursor(link: MemoryLink) -> str:
    raw = json.dumps([link.created_at.isoformat(), str(link.source_id), str(link.target_id)])
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _decode_cursor(cursor: str) -> tuple[datetime, uuid.UUID, uuid.UUID]:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        created_at, source_id, target_id = json.loads(base64.urlsafe_b64decode(padded.encode()))
        return datetime.fromisoformat(created_at), uuid.UUID(source_id), uuid.UUID(target_id)
    except (ValueError, TypeError, json.JSONDecodeError, UnicodeDecodeError):
        raise InvalidInput("cursor is not a cursor returned by this API", field="cursor") from None


async def list_links(session: AsyncSession, *, tenant_id: str, memory_type: str,
                     memory_id: uuid.UUID, direction: str, relation: str | None, limit: int,
                     cursor: str | None) -> tuple[list[MemoryLink], str | None]:
    """A page of the edges leaving and/or entering one memory, newest first."""
    outgoing = and_(MemoryLink.source_type == memory_type, MemoryLink.source_id == memory_id)
    incoming = and_(MemoryLink.target_type == memory_type, MemoryLink.target_id == memory_id)
    ends = {"outgoing": outgoing, "incoming": incoming}.get(direction, or_(outgoing, incoming))
    stmt = select(MemoryLink).where(MemoryLink.tenant_id == tenant_id, ends)
    if relation is not None:
        stmt = stmt.where(MemoryLink.relation == relation)
    order = (MemoryLink.created_at, MemoryLink.source_id, MemoryLink.target_id)
    if cursor:
        stmt = stmt.where(tuple_(*order) < tuple_(*_decode_cursor(cursor)))
    stmt = stmt.order_by(*(column.desc() for column in order)).limit(limit + 1)
    rows = list((await session.execute(stmt)).scalars())
    if len(rows) <= limit:
        return rows, None
    return rows[:limit], _encode_cursor(rows[limit - 1])
