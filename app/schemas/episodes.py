"""Episode requests and responses."""

import uuid
from typing import Any

from pydantic import AliasChoices, Field

from app.core.constants import MAX_SESSION_ID_CHARS
from app.schemas.common import (
    AwareDatetimeIn,
    ConsolidationStatus,
    Content,
    Importance,
    IsoDatetime,
    Language,
    Metadata,
    Name,
    RequestModel,
    ResponseModel,
    SessionIdIn,
)
from app.schemas.listing import ListQuery, ListText, PageCursor, PageLimit


class EpisodeListQuery(ListQuery):
    """Which episodes a listing shows, and its page."""

    butler: ListText = None
    session_id: str | None = Field(
        None,
        min_length=1,
        max_length=MAX_SESSION_ID_CHARS,
        description="Episodes of this session: stored with this id, or placed in it when "
        "stored without one (their `inferred_session`).",
    )
    consolidation_status: ConsolidationStatus | None = None
    consolidated: bool | None = None
    include_expired: bool = Field(False, description="Include expired episodes.")
    limit: PageLimit = 50
    cursor: PageCursor = None


class EpisodeCreate(RequestModel):
    """A raw observation from a session."""

    content: Content
    butler: Name = Field(description="The agent (butler) that observed it; its scope.")
    session_id: SessionIdIn | None = None
    importance: Importance = 5.0
    occurred_at: AwareDatetimeIn | None = Field(
        None,
        description="When it happened, with a time zone (ISO 8601); defaults to the "
        "time it is stored. The TTL still counts from storage.",
    )
    metadata: Metadata = Field(default_factory=dict)
    language: Language | None = None


class EpisodeBatchCreate(RequestModel):
    """Up to `max_batch_size` episodes stored in one transaction."""

    # The schema's maxItems is the configured `max_batch_size` (app.main); 10,000 is its
    # ceiling.
    items: list[EpisodeCreate] = Field(min_length=1, max_length=10_000)


class EpisodeOut(ResponseModel):
    id: uuid.UUID
    butler: str
    session_id: str | None
    inferred_session: uuid.UUID | None = Field(
        description="Read-only. Stored without a session_id: the session Engram placed it "
        "in (its butler's episode just before it within `episode_session_gap_minutes`, else "
        "just after it, else a new one); search ranks it with the other turns of that "
        "session. Null when a session_id was given or inference is off."
    )
    content: str
    importance: float
    reference_count: int
    consolidated: bool
    consolidation_status: ConsolidationStatus
    retry_count: int
    last_error: str | None
    next_attempt_at: IsoDatetime | None = Field(
        description="Read-only. When consolidation tries this failed episode again (the wait "
        "doubles with each failure, up to `consolidation_retry_max_backoff_hours`); null when "
        "it is tried at the next consolidation job, or was consolidated."
    )
    created_at: IsoDatetime
    occurred_at: IsoDatetime = Field(description="When it happened.")
    sequence: int = Field(description="Storage order; orders the turns of a session.")
    last_referenced_at: IsoDatetime | None
    expires_at: IsoDatetime | None
    metadata: dict[str, Any] = Field(validation_alias=AliasChoices("metadata_", "metadata"))


class EpisodeBatchOut(ResponseModel):
    items: list[EpisodeOut]
