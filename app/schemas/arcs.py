"""Narrative arc requests and responses."""

import uuid
from typing import Annotated, Any, Literal

from pydantic import Field

from app.core.constants import SearchMode
from app.schemas.common import (
    AwareDatetimeIn,
    Content,
    IsoDatetime,
    MemoryRef,
    Name,
    NoNul,
    RequestModel,
    ResponseModel,
    UUIDIn,
)
from app.schemas.listing import ListQuery, ListText, PageCursor, PageLimit
from app.schemas.search import QueryText, RecordScores

ArcStatus = Literal["draft", "active", "completed", "abandoned"]
ClosedStatus = Literal["completed", "abandoned"]
MAX_KEY_EVENTS = 1000
MAX_LESSONS = 50
Summary = Annotated[str, Field(max_length=10_000), NoNul]
EventText = Annotated[str, Field(max_length=2000), NoNul]


class ArcListQuery(ListQuery):
    """Which arcs a listing shows, and its page."""

    scope: ListText = None
    arc_type: ListText = None
    status: ArcStatus | None = None
    limit: PageLimit = 50
    cursor: PageCursor = None


class ArcEventCreate(MemoryRef):
    """A memory that marks a step of the arc."""

    description: EventText = ""
    occurred_at: AwareDatetimeIn | None = Field(None, description="Omitted: now.")


class ArcCreate(RequestModel):
    """A new arc, active unless `status` says draft."""

    title: Name
    arc_type: Name = Field(
        description="One of the configured `arcs.types` (by default the seven narrative arc types)."
    )
    scope: Name = "global"
    summary: Summary = ""
    entity_ids: list[UUIDIn] = Field(default_factory=list, max_length=100)
    started_at: AwareDatetimeIn | None = Field(None, description="Omitted: now.")
    key_events: list[ArcEventCreate] = Field(default_factory=list, max_length=MAX_KEY_EVENTS)
    status: Literal["draft", "active"] = "active"


class ArcUpdate(RequestModel):
    """Changes to an open arc; omitted fields stay. A draft becomes active with `status`."""

    title: Name | None = None
    summary: Summary | None = None
    arc_type: Name | None = None
    entity_ids: list[UUIDIn] | None = Field(None, max_length=100)
    started_at: AwareDatetimeIn | None = None
    status: Literal["draft", "active"] | None = None


class ArcClose(RequestModel):
    """How the arc ended."""

    outcome: Content
    lessons: list[Content] = Field(default_factory=list, max_length=MAX_LESSONS)
    status: ClosedStatus = "completed"
    ended_at: AwareDatetimeIn | None = Field(None, description="Omitted: now.")


class ArcSearchRequest(RequestModel):
    """Semantic and keyword search over arcs (title, summary, outcome, lessons)."""

    query: QueryText
    scope: Name | None = None
    arc_type: Name | None = None
    status: ArcStatus | None = None
    mode: SearchMode = "hybrid"
    limit: int = Field(10, ge=1, le=100)


class ArcBoundaryJobCreate(RequestModel):
    """Propose draft arcs by cutting a scope's episodes at gaps in occurred_at."""

    scope: Name = Field(description="The butler whose episodes are clustered.")
    gap_minutes: float | None = Field(
        None, gt=0, le=365 * 24 * 60, description="Omitted: `arcs.boundary_gap_minutes`."
    )


class ArcOut(ResponseModel):
    id: uuid.UUID
    scope: str
    title: str
    summary: str
    arc_type: str
    entity_ids: list[uuid.UUID]
    started_at: IsoDatetime
    ended_at: IsoDatetime | None
    key_events: list[dict[str, Any]]
    outcome: str | None
    lessons: list[str]
    status: ArcStatus
    created_at: IsoDatetime
    updated_at: IsoDatetime


class ArcHit(RecordScores, ArcOut):
    """An arc with its search scores."""


class ArcSearchResponse(ResponseModel):
    mode: SearchMode
    results: list[ArcHit]
