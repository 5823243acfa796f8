"""Memory link requests and responses."""

import uuid
from typing import Literal

from app.schemas.common import IsoDatetime, MemoryType, RequestModel, ResponseModel, UUIDIn

Relation = Literal["derived_from", "supports", "contradicts", "supersedes", "related_to"]
Direction = Literal["outgoing", "incoming", "both"]
# A link may also start at a procedure (its `derived_from` edges to what it was learned from).
LinkSourceType = Literal["episode", "fact", "rule", "procedure"]


class LinkCreate(RequestModel):
    """A directed provenance edge between two memories of the tenant."""

    source_type: MemoryType
    source_id: UUIDIn
    target_type: MemoryType
    target_id: UUIDIn
    relation: Relation


class LinkOut(ResponseModel):
    source_type: LinkSourceType
    source_id: uuid.UUID
    target_type: MemoryType
    target_id: uuid.UUID
    relation: Relation
    created_at: IsoDatetime
