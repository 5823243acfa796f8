"""The neighbourhood of a memory or an entity: nodes within some hops and the edges among them."""

import uuid
from collections.abc import Sequence

from sqlalchemy.ext.asyncio import AsyncSession

from app.core.errors import NotFound
from app.repositories import graph as graph_rows
from app.repositories.graph import NodeKey
from app.schemas.graph import GraphEdge, GraphNode, GraphOut

SUMMARY_CHARS = 160


def shorten(text: str, limit: int = SUMMARY_CHARS) -> str:
    """`text` on one line, cut to `limit` characters with an ellipsis when longer."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def edge_hop(source_hop: int, target_hop: int) -> int:
    """An edge is met when its nearer end is expanded: 1 + that end's hop."""
    return min(source_hop, target_hop) + 1


async def neighbourhood(
    session: AsyncSession,
    *,
    tenant_id: str,
    node_type: str,
    node_id: uuid.UUID,
    hops: int,
    relations: Sequence[str],
    max_nodes: int,
) -> GraphOut:
    """Breadth-first neighbourhood of a node; NotFound when the root does not exist."""
    root: NodeKey = (node_type, node_id)
    texts = await graph_rows.summaries(session, tenant_id=tenant_id, nodes=[root])
    if root not in texts:
        raise NotFound(f"{node_type} {node_id} not found")
    reached = await graph_rows.walk(
        session, tenant_id=tenant_id, root=root, hops=hops, relations=relations, max_nodes=max_nodes
    )
    kept = reached[:max_nodes]
    hop_of = dict(kept)
    texts.update(
        await graph_rows.summaries(
            session, tenant_id=tenant_id, nodes=[key for key, _ in kept if key != root]
        )
    )
    nodes = [
        GraphNode(
            type=key[0], id=key[1], hop=hop, summary=shorten(texts[key][0]), state=texts[key][1]
        )
        for key, hop in kept
        if key in texts
    ]
    present: set[NodeKey] = {(node.type, node.id) for node in nodes}

    edges = await _link_edges(
        session, tenant_id=tenant_id, present=present, relations=relations, hop_of=hop_of
    )
    if "about" in relations:
        edges.extend(
            await _anchor_edges(session, tenant_id=tenant_id, present=present, hop_of=hop_of)
        )
    edges = [edge for edge in edges if edge.hop <= hops]
    edges.sort(
        key=lambda e: (e.hop, e.source_type, str(e.source_id), e.target_type, str(e.target_id))
    )
    return GraphOut(
        root_type=node_type,
        root_id=node_id,
        hops=hops,
        nodes=nodes,
        edges=edges,
        truncated=len(reached) > max_nodes,
    )


async def _link_edges(
    session: AsyncSession,
    *,
    tenant_id: str,
    present: set[NodeKey],
    relations: Sequence[str],
    hop_of: dict[NodeKey, int],
) -> list[GraphEdge]:
    """The links of the `relations` among the nodes present."""
    edges: list[GraphEdge] = []
    for row in await graph_rows.links_among(
        session, tenant_id=tenant_id, nodes=list(present), relations=relations
    ):
        source, target = (row.source_type, row.source_id), (row.target_type, row.target_id)
        edges.append(
            GraphEdge(
                source_type=row.source_type,
                source_id=row.source_id,
                target_type=row.target_type,
                target_id=row.target_id,
                relation=row.relation,
                strength=row.strength,
                hop=edge_hop(hop_of[source], hop_of[target]),
            )
        )
    return edges


async def _anchor_edges(
    session: AsyncSession, *, tenant_id: str, present: set[NodeKey], hop_of: dict[NodeKey, int]
) -> list[GraphEdge]:
    """An `about` edge from each fact present to each entity present it is anchored to."""
    edges: list[GraphEdge] = []
    for row in await graph_rows.anchors_among(
        session,
        tenant_id=tenant_id,
        fact_ids=[key[1] for key in present if key[0] == "fact"],
        entity_ids=[key[1] for key in present if key[0] == "entity"],
    ):
        source, target = ("fact", row.fact_id), ("entity", row.entity_id)
        edges.append(
            GraphEdge(
                source_type="fact",
                source_id=row.fact_id,
                target_type="entity",
                target_id=row.entity_id,
                relation="about",
                strength=1.0,
                hop=edge_hop(hop_of[source], hop_of[target]),
            )
        )
    return edges
