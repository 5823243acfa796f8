"""/v1/graph: the neighbourhood of a memory, run, procedure, arc or entity."""

import uuid
from typing import Annotated, get_args

from fastapi import APIRouter, Query

from app.core.errors import problem_responses
from app.deps import ReadSessionDep, TenantDep
from app.schemas.graph import GraphOut, GraphRelation, NodeType
from app.services.graph import neighbourhood

router = APIRouter(prefix="/v1/graph", tags=["graph"])

ALL_RELATIONS: list[GraphRelation] = list(get_args(GraphRelation))


@router.get(
    "/{node_type}/{node_id}",
    response_model=GraphOut,
    responses=problem_responses(404, 422),
    summary="Neighbourhood of a memory, run, procedure, arc or entity",
)
async def get_graph(
    node_type: NodeType,
    node_id: uuid.UUID,
    session: ReadSessionDep,
    tenant_id: TenantDep,
    hops: Annotated[int, Query(ge=1, le=3, description="Edges to follow (1-3).")] = 1,
    relations: Annotated[
        list[GraphRelation] | None,
        Query(
            max_length=len(ALL_RELATIONS),
            description="Relations to follow; all when omitted: provenance links, typed entity "
            "relations (`works_at`, `knows`, ...) and `about`, which joins a fact to "
            "the entity it is anchored to.",
        ),
    ] = None,
    limit: Annotated[
        int, Query(ge=1, le=500, description="Maximum number of nodes, the root included.")
    ] = 100,
) -> GraphOut:
    """Breadth-first walk from the node (an episode, fact, rule, entity, run, procedure or
    arc) over memory links (both directions), typed
    entity-to-entity relations (the paths graph-aware search boosts along) and fact-entity
    anchors: an entity's facts are its neighbours and a fact's entity is its neighbour.

    Each node is visited once, so cycles end; nodes carry their hop, a short summary and their
    state (a forgotten memory stays in the graph, marked). Each edge carries its relation,
    strength and hop (1 + the hop of its nearer end); edges are directed as stored (`about`:
    fact -> entity). Within a hop, nodes are taken in (type, id) order until `limit`;
    `truncated` tells when the limit cut the neighbourhood short. Links to rows that no longer
    exist are skipped, as are links to run messages, feedback and ledger events (not nodes).
    """
    return await neighbourhood(
        session,
        tenant_id=tenant_id,
        node_type=node_type,
        node_id=node_id,
        hops=hops,
        relations=relations or ALL_RELATIONS,
        max_nodes=limit,
    )
