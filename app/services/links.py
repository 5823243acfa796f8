"""Links between memories, records and entities: validated, idempotent creation, listing and
deletion, each change an event; a `contradicts` or `supports` link to a fact changes what is
believed of it (`fact_beliefs`)."""

import uuid
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.core.errors import Conflict, InvalidInput, NotFound
from app.models import MemoryLink
from app.repositories import links as link_rows
from app.repositories.links import LinkEnds as LinkEnds
from app.schemas.filters import MemoryFilter
from app.schemas.links import LinkCreate, LinkListQuery
from app.services import actors, events, fact_beliefs


def link_payload(link: MemoryLink) -> dict[str, Any]:
    """A link as an event's payload."""
    return {
        "source_type": link.source_type,
        "source_id": str(link.source_id),
        "target_type": link.target_type,
        "target_id": str(link.target_id),
        "relation": link.relation,
        "strength": link.strength,
        "created_by": link.created_by,
        "reasoning": link.reasoning,
    }


async def create_link(
    session: AsyncSession, *, tenant_id: str, data: LinkCreate
) -> tuple[MemoryLink, bool]:
    """Create the edge, or return the existing one with the same ends and relation;
    (link, created).

    Both ends must be memories, records or entities of the tenant (InvalidInput otherwise).
    Other relations may join the same two ends. `created_by` defaults to the caller. A new
    `contradicts` link to a fact contradicts it, a new `supports` link strengthens it.
    """
    if (data.source_type, data.source_id) == (data.target_type, data.target_id):
        raise InvalidInput("a memory cannot be linked to itself", field="target_id")
    for end, memory_type, memory_id in (
        ("source", data.source_type, data.source_id),
        ("target", data.target_type, data.target_id),
    ):
        if not await link_rows.memory_exists(
            session, tenant_id=tenant_id, memory_type=memory_type, memory_id=memory_id
        ):
            raise InvalidInput(f"{memory_type} {memory_id} does not exist", field=f"{end}_id")
    ends = LinkEnds(data.source_type, data.source_id, data.target_type, data.target_id)
    created = await link_rows.create_link(
        session,
        tenant_id=tenant_id,
        ends=ends,
        relation=data.relation,
        strength=data.strength,
        reasoning=data.reasoning,
        created_by=data.created_by or actors.current().name,
    )
    link = await link_rows.get_link(session, tenant_id=tenant_id, ends=ends, relation=data.relation)
    if link is None:
        # The key is taken by another tenant's link; ids are random UUIDs, so this is
        # practically unreachable, but it must not become a 500.
        raise Conflict("these memories cannot be linked")
    if created:
        await events.record(session, [events.Event("link_created", tenant_id, link_payload(link))])
        await _believe(session, tenant_id=tenant_id, link=link)
    return link, created


async def _believe(session: AsyncSession, *, tenant_id: str, link: MemoryLink) -> None:
    if link.target_type != "fact":
        return
    why = {
        "link_source_type": link.source_type,
        "link_source_id": str(link.source_id),
        "reasoning": link.reasoning,
    }
    if link.relation == "contradicts":
        await fact_beliefs.contradict_if_active(
            session, tenant_id=tenant_id, fact_id=link.target_id, **why
        )
    elif link.relation == "supports":
        await fact_beliefs.strengthen(session, tenant_id=tenant_id, fact_id=link.target_id, **why)


async def require_memory(
    session: AsyncSession, *, tenant_id: str, memory_type: str, memory_id: uuid.UUID
) -> None:
    """NotFound unless the tenant has this memory."""
    if not await link_rows.memory_exists(
        session, tenant_id=tenant_id, memory_type=memory_type, memory_id=memory_id
    ):
        raise NotFound(f"{memory_type} {memory_id} not found")


async def delete_link(
    session: AsyncSession, *, tenant_id: str, ends: LinkEnds, relation: str | None
) -> list[MemoryLink]:
    """Delete the edges from source to target (of `relation` only, when given), each an
    event; NotFound when the tenant has no such edge."""
    deleted = await link_rows.delete_links(
        session, tenant_id=tenant_id, ends=ends, relation=relation
    )
    if not deleted:
        of = f" of relation {relation}" if relation else ""
        raise NotFound(
            f"no link{of} from {ends.source_type} {ends.source_id} "
            f"to {ends.target_type} {ends.target_id}"
        )
    await events.record(
        session, [events.Event("link_deleted", tenant_id, link_payload(link)) for link in deleted]
    )
    return deleted


async def list_links(
    session: AsyncSession,
    *,
    tenant_id: str,
    query: LinkListQuery,
    memory_filter: MemoryFilter | None = None,
) -> tuple[list[MemoryLink], str | None]:
    """A page of the memory's links, newest first; NotFound when the memory is absent."""
    await require_memory(
        session, tenant_id=tenant_id, memory_type=query.memory_type, memory_id=query.memory_id
    )
    return await link_rows.list_links(
        session,
        tenant_id=tenant_id,
        memory_type=query.memory_type,
        memory_id=query.memory_id,
        direction=query.direction,
        relation=query.relation,
        limit=query.limit,
        cursor=query.cursor,
        memory_filter=memory_filter,
    )
