"""Rule requests and responses."""

import uuid
from typing import Any

from pydantic import AliasChoices, Field

from app.schemas.common import (
    ClientMetadata,
    Content,
    IsoDatetime,
    Language,
    MaturityLevel,
    Metadata,
    Name,
    Permanence,
    Reason,
    RequestModel,
    ResponseModel,
    Tags,
    UUIDIn,
)
from app.schemas.listing import ListQuery, ListText, PageCursor, PageLimit


class RuleListQuery(ListQuery):
    """Which rules a listing shows, and its page."""

    scope: ListText = None
    maturity: MaturityLevel | None = None
    include_forgotten: bool = Field(False, description="Include forgotten rules.")
    limit: PageLimit = 50
    cursor: PageCursor = None


class RuleCreate(RequestModel):
    """Behavioural guidance; starts as a candidate with confidence 0.5."""

    content: Content
    scope: Name = "global"
    tags: Tags = Field(default_factory=list)
    source_butler: Name | None = None
    source_episode_id: UUIDIn | None = None
    metadata: ClientMetadata = Field(default_factory=dict)
    language: Language | None = None


class HelpfulFeedback(RequestModel):
    """A report that applying the rule helped."""

    context: Metadata = Field(default_factory=dict, description="Where the rule was applied.")


class HarmfulFeedback(RequestModel):
    """A report that applying the rule did harm; the reason feeds a later inversion."""

    reason: Reason | None = None
    context: Metadata = Field(default_factory=dict, description="Where the rule was applied.")


class RuleOut(ResponseModel):
    id: uuid.UUID
    content: str
    scope: str
    maturity: MaturityLevel
    confidence: float
    effective_confidence: float = Field(
        description="confidence * exp(-decay_rate * days since last confirmation)"
    )
    decay_rate: float
    permanence: Permanence
    effectiveness_score: float
    applied_count: int
    success_count: int
    harmful_count: int
    source_episode_id: uuid.UUID | None
    source_butler: str | None
    created_at: IsoDatetime
    last_applied_at: IsoDatetime | None
    last_evaluated_at: IsoDatetime | None
    last_confirmed_at: IsoDatetime | None
    reference_count: int
    last_referenced_at: IsoDatetime | None
    forgotten: bool = Field(
        description="Forgotten (by request or by decay); left out of search, recall and listings."
    )
    forgotten_at: IsoDatetime | None
    fading: bool = Field(description="Effective confidence fell below 0.2 at the last sweep.")
    needs_inversion: bool = Field(
        description="Earned anti-pattern inversion: at least 3 harmful "
        "marks and effectiveness under 0.3."
    )
    original_content: str | None = Field(description="The content before inversion.")
    tags: list[str]
    metadata: dict[str, Any] = Field(
        validation_alias=AliasChoices("metadata_", "metadata"),
        description="The client's own object, plus `harmful_reasons` once a harmful mark "
        "gave a reason: every such reason, oldest first (read-only; a client "
        "cannot write that key).",
    )
