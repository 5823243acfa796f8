"""A memory as a person inspects it: the row (no reference counted), its versions, links both
ways, its neighbours (with the entities it is about) and its events."""

import uuid
from dataclasses import dataclass
from typing import Any, get_args

from sqlalchemy.ext.asyncio import AsyncSession

from app.core.errors import NotFound
from app.models import Fact, MemoryEvent, MemoryLink
from app.repositories import memories as memory_rows
from app.schemas.graph import GraphOut, GraphRelation
from app.schemas.links import LinkListQuery
from app.services import events, facts, graph, links
from app.services.events import Memory, type_name
from app.services.rule_reasons import shown_one

PAGE_ITEMS = 100


@dataclass(frozen=True)
class MemoryView:
    """Everything a memory's page shows."""

    row: Any
    versions: list[Fact]
    links: list[MemoryLink]
    neighbours: GraphOut
    events: list[MemoryEvent]


async def memory_view(
    session: AsyncSession, model: type[Memory], *, tenant_id: str, memory_id: uuid.UUID
) -> MemoryView:
    """The memory and its surroundings; NotFound when the tenant has no such memory.

    Unlike GET /v1/{type}/{id}, looking at a memory here counts no reference.
    """
    row: Any = await memory_rows.get(session, model, tenant_id=tenant_id, memory_id=memory_id)
    if row is None:
        raise NotFound(f"{type_name(model)} {memory_id} not found")
    kind = type_name(model)
    versions = (
        await facts.fact_history_chain(session, tenant_id=tenant_id, fact_id=memory_id)
        if kind == "fact"
        else []
    )
    if kind == "rule":
        row = await shown_one(session, tenant_id=tenant_id, row=row)
    link_query = LinkListQuery.model_validate(
        {"memory_type": kind, "memory_id": memory_id, "limit": PAGE_ITEMS}
    )
    link_rows, _ = await links.list_links(session, tenant_id=tenant_id, query=link_query)

    around = await graph.neighbourhood(
        session,
        tenant_id=tenant_id,
        node_type=kind,
        node_id=memory_id,
        hops=1,
        relations=list(get_args(GraphRelation)),
        max_nodes=PAGE_ITEMS,
    )
    event_rows, _ = await events.list_events(
        session,
        tenant_id=tenant_id,
        memory_id=memory_id,
        event_type=None,
        since=None,
        until=None,
        limit=PAGE_ITEMS,
        cursor=None,
    )
    return MemoryView(row, versions, link_rows, around, event_rows)
