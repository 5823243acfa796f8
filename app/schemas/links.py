"""Memory link requests and responses."""

import uuid
from typing import Literal

from pydantic import Field

from app.schemas.common import IsoDatetime, LinkEndType, RequestModel, ResponseModel, UUIDIn

Relation = Literal["derived_from", "supports", "contradicts", "supersedes", "related_to",
                   "based_on", "works_at", "works_on", "knows", "owns", "member_of",
                   "located_in", "part_of", "mentions"]
Direction = Literal["outgoing", "incoming", "both"]
# A link may also start at a procedure (its `derived_from` edges to what it was learned from).
LinkSourceType = LinkEndType | Literal["procedure"]


class LinkCreate(RequestModel):
    """A directed edge between two memories or entities of the tenant: provenance
    (derived_from, supports, ...) or a typed entity relation (works_at, knows, ...)."""

    source_type: LinkEndType
    source_id: UUIDIn
    target_type: LinkEndType
    target_id: UUIDIn
    relation: Relation
    strength: float = Field(1.0, gt=0, le=1, description="How strong the relation is, in "
                            "(0, 1]; graph-aware search multiplies it along a path.")


class LinkOut(ResponseModel):
    source_type: LinkSourceType
    source_id: uuid.UUID
    target_type: LinkEndType
    target_id: uuid.UUID
    relation: Relation
    strength: float
    created_at: IsoDatetime
