"""Provenance links: validated, idempotent creation, listing and deletion."""

import uuid

from sqlalchemy.ext.asyncio import AsyncSession

from app.errors import Conflict, InvalidInput, NotFound
from app.models import MemoryLink
from app.repositories import links as link_rows
from app.schemas.links import LinkCreate


async def create_link(session: AsyncSession, *, tenant_id: str,
                      data: LinkCreate) -> tuple[MemoryLink, bool]:
    """Create the edge, or return the identical existing one; (link, created).

    Both ends must be memories (or entities) of the tenant (InvalidInput otherwise). A
    different relation already joining the same two ends is a Conflict: memory_links holds
    one edge per ordered pair.
    """
    if (data.source_type, data.source_id) == (data.target_type, data.target_id):
        raise InvalidInput("a memory cannot be linked to itself", field="target_id")
    for end, memory_type, memory_id in (("source", data.source_type, data.source_id),
                                        ("target", data.target_type, data.target_id)):
        if not await link_rows.memory_exists(session, tenant_id=tenant_id,
                                             memory_type=memory_type, memory_id=memory_id):
            raise InvalidInput(f"{memory_type} {memory_id} does not exist", field=f"{end}_id")
    created = await link_rows.create_link(
        session, tenant_id=tenant_id, source_type=data.source_type, source_id=data.source_id,
        target_type=data.target_type, target_id=data.target_id, relation=data.relation,
        strength=data.strength)
    link = await link_rows.get_link(
        session, tenant_id=tenant_id, source_type=data.source_type, source_id=data.source_id,
        target_type=data.target_type, target_id=data.target_id)
    if link is None:
        # The pair is taken by another tenant's link; ids are random UUIDs, so this is
        # practically unreachable, but it must not become a 500.
        raise Conflict("these memories cannot be linked")
    if link.relation != data.relation:
        raise Conflict(f"{data.source_type} {data.source_id} is already linked to "
                       f"{data.target_type} {data.target_id} as {link.relation!r}; "
                       "delete that link first")
    return link, created


async def require_memory(session: AsyncSession, *, tenant_id: str, memory_type: str,
                         memory_id: uuid.UUID) -> None:
    """NotFound unless the tenant has this memory."""
    if not await link_rows.memory_exists(session, tenant_id=tenant_id,
                                         memory_type=memory_type, memory_id=memory_id):
        raise NotFound(f"{memory_type} {memory_id} not found")


async def delete_link(session: AsyncSession, *, tenant_id: str, source_type: str,
                      source_id: uuid.UUID, target_type: str, target_id: uuid.UUID) -> None:
    """Delete one edge; NotFound when the tenant has no such edge."""
    if not await link_rows.delete_link(session, tenant_id=tenant_id, source_type=source_type,
                                       source_id=source_id, target_type=target_type,
                                       target_id=target_id):
        raise NotFound(f"no link from {source_type} {source_id} to {target_type} {target_id}")


async def list_links(session: AsyncSession, *, tenant_id: str, memory_type: str,
                     memory_id: uuid.UUID, direction: str, relation: str | None, limit: int,
                     cursor: str | None) -> tuple[list[MemoryLink], str | None]:
    """A page of the memory's links, newest first; NotFound when the memory is absent."""
    await require_memory(session, tenant_id=tenant_id, memory_type=memory_type,
                         memory_id=memory_id)
    return await link_rows.list_links(session, tenant_id=tenant_id, memory_type=memory_type,
                                      memory_id=memory_id, direction=direction,
                                      relation=relation, limit=limit, cursor=cursor)
