"""Memory link requests and responses."""

import uuid
from typing import Literal

from app.schemas.common import IsoDatetime, LinkEndType, RequestModel, ResponseModel, UUIDIn

Relation = Literal["derived_from", "supports", "contradicts", "supersedes", "related_to",
                   "based_on"]
Direction = Literal["outgoing", "incoming", "both"]


class LinkCreate(RequestModel):
    """A directed provenance edge between two memories of the tenant."""

    source_type: LinkEndType
    source_id: UUIDIn
    target_type: LinkEndType
    target_id: UUIDIn
    relation: Relation


class LinkOut(ResponseModel):
    source_type: LinkEndType
    source_id: uuid.UUID
    target_type: LinkEndType
    target_id: uuid.UUID
    relation: Relation
    created_at: IsoDatetime
