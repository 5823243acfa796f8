"""Background job requests and responses."""

import uuid
from typing import Any, Literal

from pydantic import Field

from app.schemas.common import IsoDatetime, RequestModel, ResponseModel
from app.schemas.listing import ListQuery, PageCursor, PageLimit

JobKind = Literal[
    "consolidation", "decay", "cleanup", "erasure", "pii_scrub", "reflection", "arc_boundaries"
]
JobStatus = Literal["queued", "running", "succeeded", "failed"]
MAX_CLEANUP_ENTRIES = 10_000_000


class CleanupJobCreate(RequestModel):
    """Episode cleanup: delete expired episodes, then enforce the capacity limit."""

    max_entries: int = Field(
        10_000,
        ge=0,
        le=MAX_CLEANUP_ENTRIES,
        description="Episodes the tenant may keep; the oldest consolidated ones go first.",
    )


class JobOut(ResponseModel):
    """A durable job: queued, then running on one worker, then succeeded or failed."""

    id: uuid.UUID
    kind: JobKind
    status: JobStatus
    params: dict[str, Any]
    result: dict[str, Any] | None = Field(
        description="Figures of the finished job (counts per transition, deletions, ...)."
    )
    errors: list[str] = Field(description="Errors met while running; a job may succeed with some.")
    attempts: int = Field(description="How many times a worker has claimed the job.")
    created_at: IsoDatetime
    scheduled_for: IsoDatetime | None = Field(
        description="The scheduler slot of a scheduled job; null when enqueued through the API."
    )
    started_at: IsoDatetime | None
    finished_at: IsoDatetime | None
    duration_seconds: float | None = Field(description="finished_at - started_at.")


class PiiScrubJobCreate(RequestModel):
    """PII scrub of run messages."""

    rescan: bool = Field(
        False,
        description="Check every message again, not only the ones "
        "added since the last scrub (after changing the patterns).",
    )


class JobListQuery(ListQuery):
    """Which of the tenant's jobs to list, newest first, and the page."""

    kind: JobKind | None = None
    status: JobStatus | None = None
    limit: PageLimit = 50
    cursor: PageCursor = None
