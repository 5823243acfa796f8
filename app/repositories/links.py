"""memory_links: provenance edges between memories and typed relations of entities."""

import uuid
from dataclasses import asdict, dataclass

from sqlalchemy import ColumnElement, and_, delete, func, or_, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from app.models import (
    AgentEvent,
    Arc,
    Entity,
    MemoryLink,
    Procedure,
    Run,
    RunFeedback,
    RunMessage,
)
from app.repositories import pagination
from app.repositories.memories import MODELS
from app.repositories.memory_filters import compile_filter
from app.schemas.filters import MemoryFilter


@dataclass(frozen=True)
class LinkEnds:
    """An edge's source and target: a memory, record or entity each."""

    source_type: str
    source_id: uuid.UUID
    target_type: str
    target_id: uuid.UUID


async def create_link(
    session: AsyncSession,
    *,
    tenant_id: str,
    ends: LinkEnds,
    relation: str,
    strength: float = 1.0,
    reasoning: str | None = None,
    created_by: str | None = None,
) -> bool:
    """Insert an edge; an existing edge (same ends and relation) is left as it is. True when
    a row was added."""
    stmt = (
        insert(MemoryLink)
        .values(
            tenant_id=tenant_id,
            **asdict(ends),
            relation=relation,
            strength=strength,
            reasoning=reasoning,
            created_by=created_by,
        )
        .on_conflict_do_nothing()
    )
    result = await session.execute(stmt)
    return bool(result.rowcount)  # type: ignore[attr-defined]


async def link_supersedes(
    session: AsyncSession, *, tenant_id: str, newer: uuid.UUID, older: uuid.UUID
) -> bool:
    """The `supersedes` edge from the newer fact to the older (`create_link`)."""
    return await create_link(
        session,
        tenant_id=tenant_id,
        ends=LinkEnds("fact", newer, "fact", older),
        relation="supersedes",
    )


def _key(ends: LinkEnds) -> list[ColumnElement[bool]]:
    return [
        MemoryLink.source_type == ends.source_type,
        MemoryLink.source_id == ends.source_id,
        MemoryLink.target_type == ends.target_type,
        MemoryLink.target_id == ends.target_id,
    ]


async def get_link(
    session: AsyncSession, *, tenant_id: str, ends: LinkEnds, relation: str
) -> MemoryLink | None:
    """The tenant's edge of `relation` from source to target, if any."""
    stmt = select(MemoryLink).where(
        MemoryLink.tenant_id == tenant_id, *_key(ends), MemoryLink.relation == relation
    )
    return (await session.execute(stmt)).scalar_one_or_none()


async def delete_links(
    session: AsyncSession, *, tenant_id: str, ends: LinkEnds, relation: str | None
) -> list[MemoryLink]:
    """Delete the tenant's edges from source to target (of `relation` only, when given);
    the deleted rows."""
    stmt = delete(MemoryLink).where(MemoryLink.tenant_id == tenant_id, *_key(ends))
    if relation is not None:
        stmt = stmt.where(MemoryLink.relation == relation)
    result = await session.execute(stmt.returning(MemoryLink))
    return list(result.scalars())


LINKABLE = {
    **MODELS,
    "entity": Entity,
    "run": Run,
    "run_message": RunMessage,
    "run_feedback": RunFeedback,
    "agent_event": AgentEvent,
    "procedure": Procedure,
    "arc": Arc,
}


async def memory_exists(
    session: AsyncSession, *, tenant_id: str, memory_type: str, memory_id: uuid.UUID
) -> bool:
    """True when the tenant has this memory (or run record, or ledger event)."""
    model = LINKABLE[memory_type]
    stmt = (
        select(func.count())
        .select_from(model)
        .where(model.id == memory_id, model.tenant_id == tenant_id)
    )
    return bool((await session.execute(stmt)).scalar_one())


async def list_links(
    session: AsyncSession,
    *,
    tenant_id: str,
    memory_type: str,
    memory_id: uuid.UUID,
    direction: str,
    relation: str | None,
    limit: int,
    cursor: str | None,
    memory_filter: MemoryFilter | None = None,
) -> tuple[list[MemoryLink], str | None]:
    """A page of the edges leaving and/or entering one memory, newest first, those
    `memory_filter` admits."""
    outgoing = and_(MemoryLink.source_type == memory_type, MemoryLink.source_id == memory_id)
    incoming = and_(MemoryLink.target_type == memory_type, MemoryLink.target_id == memory_id)
    ends = {"outgoing": outgoing, "incoming": incoming}.get(direction, or_(outgoing, incoming))
    stmt = select(MemoryLink).where(
        MemoryLink.tenant_id == tenant_id, ends, *compile_filter("link", memory_filter)
    )
    if relation is not None:
        stmt = stmt.where(MemoryLink.relation == relation)
    order = (MemoryLink.created_at, MemoryLink.id)
    return await pagination.list_page(session, stmt, order=order, limit=limit, cursor=cursor)
