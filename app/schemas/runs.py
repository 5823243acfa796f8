"""Task run requests and responses."""

import uuid
from typing import Annotated, Any, Literal

from pydantic import Field

from app.schemas.common import (
    AwareDatetimeIn,
    Content,
    IsoDatetime,
    Metadata,
    Name,
    Reason,
    RequestModel,
    ResponseModel,
    UUIDIn,
)
from app.schemas.listing import ListQuery, ListText, PageCursor, PageLimit

Role = Literal["planner", "executor", "critic", "human"]
FeedbackSource = Literal["critic", "human"]
Rating = Annotated[float, Field(ge=0.0, le=1.0, strict=True, description="0 (worst) to 1 (best).")]
Score = Annotated[float, Field(ge=-1e9, le=1e9, strict=True)]
MAX_MESSAGES = 1000
MAX_QUERY_CHARS = 4000
QueryText = Annotated[
    str,
    Field(
        max_length=MAX_QUERY_CHARS,
        description="Free text; a query left empty after collapsing whitespace finds nothing.",
    ),
]


class RunListQuery(ListQuery):
    """Which runs a listing shows, and its page."""

    task_id: ListText = None
    success: bool | None = None
    limit: PageLimit = 50
    cursor: PageCursor = None


class RunCreate(RequestModel):
    """Start the record of one task run."""

    task_id: Name
    summary: Content | None = Field(
        None, description="What the run was about; embedded with task_id for run search."
    )
    agent_version: Name | None = None
    task_version: Name | None = None
    rubric_version: Name | None = None
    started_at: AwareDatetimeIn | None = Field(None, description="Defaults to now.")
    finished_at: AwareDatetimeIn | None = None
    score_numeric: Score | None = None
    success: bool | None = None
    meta: Metadata = Field(default_factory=dict)


class RunUpdate(RequestModel):
    """Finish a run or correct its outcome; omitted fields are left as they are."""

    summary: Content | None = None
    finished_at: AwareDatetimeIn | None = None
    score_numeric: Score | None = None
    success: bool | None = None


class MessageCreate(RequestModel):
    """One message of a run."""

    role: Role
    content: Content
    token_count: int | None = Field(
        None, ge=0, le=10_000_000, description="Defaults to an estimate (characters / 4)."
    )


class MessageBatchCreate(RequestModel):
    """Messages appended in one transaction, in this order."""

    items: list[MessageCreate] = Field(min_length=1, max_length=MAX_MESSAGES)


class FeedbackCreate(RequestModel):
    """A critic's or human's judgement of a run."""

    source: FeedbackSource
    rating: Rating
    rationale: Reason | None = None


class RunMessageOut(ResponseModel):
    id: uuid.UUID
    run_id: uuid.UUID
    position: int = Field(description="Append order.")
    role: Role
    content: str
    token_count: int
    scrubbed_at: IsoDatetime | None = Field(description="When the PII scrub last checked it.")
    created_at: IsoDatetime


class RunFeedbackOut(ResponseModel):
    id: uuid.UUID
    run_id: uuid.UUID
    source: FeedbackSource
    rating: float
    rationale: str | None
    lesson_rule_id: uuid.UUID | None = Field(
        description="The candidate rule this feedback became, if it did."
    )
    created_at: IsoDatetime


class RunOut(ResponseModel):
    id: uuid.UUID
    task_id: str
    summary: str | None
    agent_version: str | None
    task_version: str | None
    rubric_version: str | None
    started_at: IsoDatetime
    finished_at: IsoDatetime | None
    score_numeric: float | None
    success: bool | None
    meta: dict[str, Any]
    created_at: IsoDatetime


class RunDetailOut(RunOut):
    messages: list[RunMessageOut]
    feedback: list[RunFeedbackOut]


class MessageBatchOut(ResponseModel):
    items: list[RunMessageOut]


class RunSearchRequest(RequestModel):
    """Runs similar to a text, by their own embedding and their messages'."""

    query: QueryText
    success: bool | None = Field(
        None,
        description="Only runs with this outcome "
        "(false: the failure loop's 'similar past failures').",
    )
    task_id: Name | None = None
    agent_version: Name | None = None
    max_rating: Rating | None = Field(
        None, description="Only runs with some feedback rated at most this."
    )
    limit: int = Field(10, ge=1, le=100)


class RunSearchHit(RunOut):
    similarity: float = Field(
        description="Best cosine similarity of the run or one of its messages to the query."
    )
    matched_message: RunMessageOut | None = Field(
        description="The message that matched best, when it beat the run itself."
    )
    feedback: list[RunFeedbackOut] = Field(description="The run's feedback, oldest first.")


class RunSearchResponse(ResponseModel):
    results: list[RunSearchHit]


class LessonsRequest(RequestModel):
    """Turn critic feedback of failed runs into candidate rules."""

    max_rating: Rating = Field(0.5, description="Feedback rated at most this is a lesson.")
    scope: Name = Field("global", description="Scope of the candidate rules.")
    run_id: UUIDIn | None = Field(None, description="Only this run's feedback.")


class LessonsOut(ResponseModel):
    rules_created: int
    rule_ids: list[uuid.UUID]
