"""Memory link requests and responses."""

import uuid
from typing import Literal

from pydantic import Field

from app.schemas.common import (
    IsoDatetime,
    LinkEndType,
    Name,
    Reason,
    RequestModel,
    ResponseModel,
    UUIDIn,
)
from app.schemas.listing import ListQuery, PageCursor, PageLimit

Relation = Literal[
    "derived_from",
    "supports",
    "contradicts",
    "supersedes",
    "related_to",
    "based_on",
    "works_at",
    "works_on",
    "knows",
    "owns",
    "member_of",
    "located_in",
    "part_of",
    "mentions",
]
Direction = Literal["outgoing", "incoming", "both"]


class LinkListQuery(ListQuery):
    """Whose links a listing shows, which of them, and its page."""

    memory_type: LinkEndType
    memory_id: uuid.UUID
    direction: Direction = Field(
        "both", description="outgoing: the memory is the source; incoming: the target."
    )
    relation: Relation | None = None
    limit: PageLimit = 50
    cursor: PageCursor = None


class LinkCreate(RequestModel):
    """A directed edge between two memories, records or entities of the tenant: provenance
    (derived_from, supports, ...) or a typed entity relation (works_at, knows, ...)."""

    source_type: LinkEndType
    source_id: UUIDIn
    target_type: LinkEndType
    target_id: UUIDIn
    relation: Relation
    strength: float = Field(
        1.0,
        gt=0,
        le=1,
        description="How strong the relation is, in "
        "(0, 1]; graph-aware search multiplies it along a path.",
    )
    reasoning: Reason | None = Field(None, description="Why the link was made.")
    created_by: Name | None = Field(
        None,
        description="Who made the link (an agent's or a "
        "person's name); the caller's API key (`key:<id>`) when "
        "omitted.",
    )


class LinkOut(ResponseModel):
    id: uuid.UUID
    source_type: LinkEndType
    source_id: uuid.UUID
    target_type: LinkEndType
    target_id: uuid.UUID
    relation: Relation
    strength: float
    reasoning: str | None
    created_by: str | None = Field(
        description="Who made the link: the name given, else the "
        "API key (`key:<id>`) or job (`job:<id>`) that made it; "
        "`system:mentions` for a mention found when a memory was "
        "stored; null for the other links the service makes itself "
        "(supersedes, automatic related_to, provenance)."
    )
    created_at: IsoDatetime
