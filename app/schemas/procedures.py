"""Procedure requests and responses."""

import uuid
from typing import Annotated, Any, Literal

from pydantic import Field, StrictBool, field_validator

from app.core.constants import SearchMode
from app.schemas.common import IsoDatetime, MemoryRef, Name, NoNul, RequestModel, ResponseModel
from app.schemas.listing import ListQuery, ListText, PageCursor, PageLimit
from app.schemas.search import QueryText, RecordScores
from app.schemas.working_memory import JsonObject

ProcedureStatus = Literal["draft", "active", "deprecated"]
NewProcedureStatus = Literal["draft", "active"]
MAX_STEPS = 100
MAX_SOURCES = 100
MAX_DESCRIPTION_CHARS = 10_000
MAX_DURATION_MS = 30 * 24 * 3600 * 1000
Description = Annotated[str, Field(max_length=MAX_DESCRIPTION_CHARS), NoNul]
Action = Annotated[Name, Field(description="What the step does, e.g. `send_email`.")]


class ProcedureStep(RequestModel):
    """One step: its number, the action, a parameter template and when it applies."""

    step: int = Field(ge=1, le=MAX_STEPS, description="1, 2, 3, ... in order.")
    action: Action
    params_template: JsonObject = Field(default_factory=dict)
    conditions: JsonObject = Field(default_factory=dict)


class ProcedureListQuery(ListQuery):
    """Which procedures a listing shows, and its page."""

    agent_id: ListText = None
    name: ListText = None
    status: ProcedureStatus | None = None
    include_superseded: bool = Field(False, description="Include old versions.")
    limit: PageLimit = 50
    cursor: PageCursor = None


Steps = Annotated[list[ProcedureStep], Field(min_length=1, max_length=MAX_STEPS)]
LearnedFrom = Annotated[
    list[MemoryRef],
    Field(
        max_length=MAX_SOURCES,
        description="Memories the procedure was learned from; each gets a `derived_from` link "
        "from the procedure.",
    ),
]


def _numbered(steps: list[ProcedureStep]) -> list[ProcedureStep]:
    for position, item in enumerate(steps, start=1):
        if item.step != position:
            raise ValueError(
                f"steps must be numbered 1, 2, 3, ... in order; item {position - 1}"
                f" has step {item.step}"
            )
    return steps


class ProcedureCreate(RequestModel):
    """A new procedure; its name must be free among the agent's current procedures."""

    agent_id: Name = Field(description="The agent that owns the procedure.")
    name: Name
    description: Description = ""
    steps: Steps
    preconditions: JsonObject = Field(default_factory=dict, description="When it applies.")
    postconditions: JsonObject = Field(
        default_factory=dict, description="The expected state afterwards."
    )
    learned_from: LearnedFrom = Field(default_factory=list)
    status: NewProcedureStatus = "draft"

    _steps_in_order = field_validator("steps")(_numbered)


class ProcedureVersionCreate(RequestModel):
    """The next version of a procedure: same agent and name, new definition."""

    description: Description | None = Field(None, description="Omitted: the old one's.")
    steps: Steps
    preconditions: JsonObject | None = Field(None, description="Omitted: the old ones.")
    postconditions: JsonObject | None = Field(None, description="Omitted: the old ones.")
    learned_from: LearnedFrom | None = Field(None, description="Omitted: the old list.")
    status: NewProcedureStatus | None = Field(
        None, description="Omitted: the old version's status (draft if it was deprecated)."
    )

    _steps_in_order = field_validator("steps")(_numbered)


class ProcedureUpdate(RequestModel):
    """A status change: draft -> active -> deprecated (a superseded version stays deprecated)."""

    status: ProcedureStatus


class ExecutionCreate(RequestModel):
    """One run of the procedure."""

    success: StrictBool
    duration_ms: int | None = Field(
        None, ge=0, le=MAX_DURATION_MS, description="Omitted: the run is not timed."
    )


class ProcedureSearchRequest(RequestModel):
    """Semantic and keyword search over the tenant's procedures."""

    query: QueryText
    agent_id: Name | None = None
    status: ProcedureStatus | None = None
    include_superseded: bool = Field(False, description="Search old versions too.")
    mode: SearchMode = "hybrid"
    limit: int = Field(10, ge=1, le=100)


class ProcedureOut(ResponseModel):
    id: uuid.UUID
    agent_id: str
    name: str
    description: str
    steps: list[dict[str, Any]]
    preconditions: dict[str, Any]
    postconditions: dict[str, Any]
    learned_from: list[dict[str, Any]]
    execution_count: int
    success_count: int
    success_rate: float | None = Field(
        description="success_count / execution_count; null before the first execution."
    )
    avg_duration_ms: float | None = Field(description="Mean duration of the timed executions.")
    last_executed_at: IsoDatetime | None
    status: ProcedureStatus
    version: int
    superseded_by: uuid.UUID | None = Field(description="The next version, once there is one.")
    created_at: IsoDatetime
    updated_at: IsoDatetime


class ProcedureHit(RecordScores, ProcedureOut):
    """A procedure with its search scores."""


class ProcedureSearchResponse(ResponseModel):
    mode: SearchMode
    results: list[ProcedureHit]
