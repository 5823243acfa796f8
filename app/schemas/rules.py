"""Rule requests and responses."""

import uuid
from typing import Any

from pydantic import AliasChoices, Field

from app.schemas.common import (
    Content,
    IsoDatetime,
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


class RuleCreate(RequestModel):
    """Behavioural guidance; starts as a candidate with confidence 0.5."""

    content: Content
    scope: Name = "global"
    tags: Tags = Field(default_factory=list)
    source_butler: Name | None = None
    source_episode_id: UUIDIn | None = None
    metadata: Metadata = Field(default_factory=dict)


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
    tags: list[str]
    metadata: dict[str, Any] = Field(validation_alias=AliasChoices("metadata_", "metadata"))
