"""The neighbourhood of a memory or entity as nodes and edges."""

import uuid
from typing import Literal

from pydantic import BaseModel, Field

NodeType = Literal["episode", "fact", "rule", "entity", "run", "procedure", "arc"]
# Provenance links, typed entity-to-entity relations (the paths graph-aware search follows)
# and `about`, a fact's anchor to its entity.
GraphRelation = Literal[
    "derived_from",
    "supports",
    "contradicts",
    "supersedes",
    "related_to",
    "works_at",
    "works_on",
    "knows",
    "owns",
    "member_of",
    "located_in",
    "part_of",
    "mentions",
    "about",
]


class GraphNode(BaseModel):
    type: NodeType
    id: uuid.UUID
    hop: int = Field(description="Edges between the root and this node (root: 0).")
    summary: str = Field(description="At most 160 characters describing the node.")
    state: str = Field(
        description="fact: its validity; episode: active or expired; rule: active or "
        "forgotten; entity: active or merged; run: running, succeeded, failed or finished "
        "(no verdict); procedure: draft, active or deprecated; arc: its status."
    )


class GraphEdge(BaseModel):
    source_type: NodeType
    source_id: uuid.UUID
    target_type: NodeType
    target_id: uuid.UUID
    relation: GraphRelation
    strength: float = Field(
        description="The link's strength in (0, 1], which graph-aware "
        "search multiplies along a path (`about`: 1)."
    )
    hop: int = Field(description="1 + the hop of the edge's nearer end.")


class GraphOut(BaseModel):
    root_type: NodeType
    root_id: uuid.UUID
    hops: int
    nodes: list[GraphNode]
    edges: list[GraphEdge]
    truncated: bool = Field(description="True when the node limit cut the neighbourhood short.")
