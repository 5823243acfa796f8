"""The graph tool: the neighbourhood of a memory or entity, as GET /v1/graph gives it."""

import uuid
from typing import Annotated, get_args

from mcp.server.mcpserver import Context
from mcp.types import ToolAnnotations
from pydantic import Field
from sqlalchemy.ext.asyncio import AsyncSession

from app.mcp.calls import Caller, JsonObject, read_call
from app.mcp.toolset import ToolSet
from app.schemas.graph import GraphOut, GraphRelation, NodeType
from app.services.graph import neighbourhood

ALL_RELATIONS: list[GraphRelation] = list(get_args(GraphRelation))
EndIdArg = Annotated[uuid.UUID, Field(description="Its id (a UUID).")]


tools = ToolSet("graph")


@tools.add(annotations=ToolAnnotations(read_only_hint=True))
async def graph_neighbourhood(
    node_type: Annotated[
        NodeType, Field(description="episode, fact, rule, entity, run, procedure or arc.")
    ],
    node_id: EndIdArg,
    ctx: Context,
    hops: Annotated[int, Field(ge=1, le=3, description="Edges to follow (1-3).")] = 1,
    relations: Annotated[
        list[GraphRelation] | None,
        Field(
            max_length=len(ALL_RELATIONS),
            description="Relations to follow; all when left out (provenance links, entity "
            "relations and about, a fact's anchor to its entity).",
        ),
    ] = None,
    limit: Annotated[
        int, Field(ge=1, le=500, description="Most nodes, the root included (1-500).")
    ] = 100,
) -> JsonObject:
    """Explore what is connected to a memory or entity: the nodes within `hops` edges and the
    edges between them."""

    async def work(session: AsyncSession, caller: Caller) -> GraphOut:
        return await neighbourhood(
            session,
            tenant_id=caller.tenant_id,
            node_type=node_type,
            node_id=node_id,
            hops=hops,
            relations=relations or ALL_RELATIONS,
            max_nodes=limit,
        )

    return await read_call(ctx, work)
