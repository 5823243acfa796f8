"""Link tools: typed edges between memories and entities, as /v1/links offers them."""

import uuid
from typing import Annotated

from mcp.server.mcpserver import Context
from mcp.types import ToolAnnotations
from pydantic import Field
from sqlalchemy.ext.asyncio import AsyncSession

from app.mcp.args import CursorArg, LinkFilterArg, PageLimitArg, filter_of
from app.mcp.calls import Caller, JsonObject, build, call, page_call
from app.mcp.toolset import ToolSet
from app.responses.links import link_out
from app.schemas.common import LinkEndType, ResponseModel
from app.schemas.links import Direction, LinkCreate, LinkListQuery, LinkOut, Relation
from app.services import links

EndTypeArg = Annotated[
    LinkEndType,
    Field(
        description="episode, fact, rule, entity, procedure, "
        "arc, or a run, run message, run "
        "feedback or agent event."
    ),
]
EndIdArg = Annotated[uuid.UUID, Field(description="Its id (a UUID).")]


class LinkDeleted(ResponseModel):
    """The edge that was deleted."""

    source_type: str
    source_id: uuid.UUID
    target_type: str
    target_id: uuid.UUID
    deleted: bool = True


tools = ToolSet("graph")


@tools.add(annotations=ToolAnnotations(idempotent_hint=True))
async def link_create(
    source_type: EndTypeArg,
    source_id: EndIdArg,
    target_type: EndTypeArg,
    target_id: EndIdArg,
    relation: Relation,
    ctx: Context,
    strength: float = 1.0,
    reasoning: Annotated[
        str | None, Field(description="Why the link was made (kept with it).")
    ] = None,
    created_by: Annotated[
        str | None, Field(description="Who made it; default: your API key.")
    ] = None,
) -> JsonObject:
    """Link two memories or entities with a directed, typed edge (provenance such as
    derived_from or supports, or a relation such as works_at). Creating an edge that exists
    returns it."""
    data = build(
        LinkCreate,
        source_type=source_type,
        source_id=source_id,
        target_type=target_type,
        target_id=target_id,
        relation=relation,
        strength=strength,
        reasoning=reasoning,
        created_by=created_by,
    )

    async def work(session: AsyncSession, caller: Caller) -> LinkOut:
        link, _ = await links.create_link(session, tenant_id=caller.tenant_id, data=data)
        return link_out(link)

    return await call(ctx, work)


@tools.add(annotations=ToolAnnotations(read_only_hint=True))
async def link_list(
    memory_type: EndTypeArg,
    memory_id: EndIdArg,
    ctx: Context,
    direction: Direction = "both",
    relation: Relation | None = None,
    limit: PageLimitArg = 50,
    cursor: CursorArg = None,
    filter: LinkFilterArg = None,
) -> JsonObject:
    """The links of one memory or entity, outgoing, incoming or both, newest first: what it was
    derived from, what supports or contradicts it."""
    query = build(
        LinkListQuery,
        memory_type=memory_type,
        memory_id=memory_id,
        direction=direction,
        relation=relation,
        limit=limit,
        cursor=cursor,
    )
    return await page_call(
        ctx, links.list_links, link_out, query=query, memory_filter=filter_of(filter, "link")
    )


@tools.add(annotations=ToolAnnotations(destructive_hint=True))
async def link_delete(
    source_type: EndTypeArg,
    source_id: EndIdArg,
    target_type: EndTypeArg,
    target_id: EndIdArg,
    ctx: Context,
    relation: Relation | None = None,
) -> JsonObject:
    """Delete the edges from source to target (only those of `relation`, when given): a
    wrong or outdated link; the memories stay."""

    async def work(session: AsyncSession, caller: Caller) -> LinkDeleted:
        ends = links.LinkEnds(source_type, source_id, target_type, target_id)
        await links.delete_link(session, tenant_id=caller.tenant_id, ends=ends, relation=relation)
        return LinkDeleted(
            source_type=source_type,
            source_id=source_id,
            target_type=target_type,
            target_id=target_id,
        )

    return await call(ctx, work)
