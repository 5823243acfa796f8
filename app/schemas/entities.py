"""Entity requests and responses: CRUD, resolve and merge."""

import math
import uuid
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, AliasChoices, Field

from app.schemas.common import (
    IsoDatetime,
    MemoryMetadata,
    Name,
    RequestModel,
    ResponseModel,
    UUIDIn,
)
from app.schemas.listing import ListQuery, ListText, PageCursor, PageLimit

EntityType = Literal["person", "organization", "place", "other"]
NameMatch = Literal["exact", "alias", "prefix", "fuzzy"]
MAX_ALIASES = 100


def _finite(value: float) -> float:
    if not math.isfinite(value):
        raise ValueError("must be a finite number")
    return value


EntityMetadata = MemoryMetadata
Aliases = Annotated[list[Name], Field(max_length=MAX_ALIASES)]
DomainScore = Annotated[float, Field(ge=-1000.0, le=1000.0), AfterValidator(_finite)]


class EntityListQuery(ListQuery):
    """Which entities a listing shows, and its page."""

    entity_type: EntityType | None = None
    name: ListText = Field(
        None,
        description="Case-insensitive substring of the canonical "
        "name; % and _ are taken literally.",
    )
    include_merged: bool = Field(False, description="Include tombstones of merged entities.")
    limit: PageLimit = 50
    cursor: PageCursor = None


class EntityCreate(RequestModel):
    """A new identity anchor; (canonical_name, entity_type) is unique per tenant."""

    canonical_name: Name
    entity_type: EntityType
    aliases: Aliases = Field(default_factory=list)
    metadata: EntityMetadata = Field(default_factory=dict)


class EntityUpdate(RequestModel):
    """Omitted fields stay as they are."""

    canonical_name: Name | None = Field(None, description="Replaces the canonical name.")
    aliases: Aliases | None = Field(None, description="Replaces the whole alias list.")
    metadata: EntityMetadata | None = Field(
        None,
        description="A JSON Merge Patch (RFC 7396) of the stored metadata: a key set "
        "to null is removed, objects merge, other values replace.",
    )


class EntityOut(ResponseModel):
    id: uuid.UUID
    canonical_name: str
    entity_type: EntityType
    aliases: list[str]
    metadata: dict[str, Any] = Field(validation_alias=AliasChoices("metadata_", "metadata"))
    merged_into_id: uuid.UUID | None = Field(
        None, description="Set on a merged (tombstoned) entity: the entity it was merged into."
    )
    created_at: IsoDatetime
    updated_at: IsoDatetime


class ContextHints(RequestModel):
    """Context that re-ranks candidates."""

    topic: Annotated[str, Field(min_length=1, max_length=1000)] | None = Field(
        None, description="Words compared with each candidate's facts (Jaccard, up to +20)."
    )
    mentioned_with: Annotated[list[Name], Field(max_length=50)] = Field(
        default_factory=list,
        description="Names mentioned alongside; their words join the topic's in the comparison.",
    )
    domain_scores: Annotated[dict[UUIDIn, DomainScore], Field(max_length=1000)] = Field(
        default_factory=dict, description="entity_id -> score added to that candidate's score."
    )


class ResolveRequest(RequestModel):
    """Resolve a name to ranked candidates; nothing is ever created."""

    name: Name
    entity_type: EntityType | None = Field(None, description="Only candidates of this type.")
    enable_fuzzy: bool = Field(
        False, description="Add trigram-similar names (similarity >= 0.3) as tier 4."
    )
    context_hints: ContextHints | None = None
    limit: int = Field(20, ge=1, le=100, description="Maximum number of candidates returned.")


class ResolveCandidate(ResponseModel):
    entity_id: uuid.UUID
    canonical_name: str
    entity_type: EntityType
    score: float = Field(
        description="Base score of the tier + hint boost + domain score, "
        "rounded to 4 decimal places."
    )
    name_match: NameMatch
    aliases: list[str]


class MergeRequest(RequestModel):
    """The entity to fold into the target of the path."""

    source_id: UUIDIn


class MergeOut(ResponseModel):
    target: EntityOut
    source_entity_id: uuid.UUID
    target_entity_id: uuid.UUID
    facts_repointed: int = Field(description="Facts of the source now anchored to the target.")
    facts_superseded: int = Field(description="Facts that lost a (scope, predicate) conflict.")
    aliases_added: list[str] = Field(description="Names added to the target's aliases.")
