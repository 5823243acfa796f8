"""Working memory requests and responses."""

import uuid
from typing import Annotated, Any

from pydantic import AfterValidator, Field

from app.schemas.common import (
    MAX_DOCUMENT_BYTES,
    IsoDatetime,
    RequestModel,
    ResponseModel,
    UUIDIn,
    bounded_json,
)

MAX_RETRIEVED_IDS = 1000
MAX_DECISIONS = 500
MIN_TTL_SECONDS = 60
MAX_TTL_SECONDS = 30 * 24 * 3600

_document = AfterValidator(bounded_json(MAX_DOCUMENT_BYTES))
JsonObject = Annotated[dict[str, Any], _document]
JsonValue = Annotated[Any, _document]
Decisions = Annotated[list[Any], Field(max_length=MAX_DECISIONS), _document]


class WorkingMemoryWrite(RequestModel):
    """The whole writable document of a working memory (PUT replaces it; PATCH merges into it)."""

    active_context: JsonObject = Field(
        default_factory=dict,
        description="The current focus, e.g. {project, entities, goals, constraints}.",
    )
    scratchpad: JsonObject = Field(
        default_factory=dict, description="The agent's working notes, key by key."
    )
    retrieved_memory_ids: list[UUIDIn] = Field(
        default_factory=list,
        max_length=MAX_RETRIEVED_IDS,
        description="Ids of the memories retrieved this session.",
    )
    decisions: Decisions = Field(
        default_factory=list, description="The decisions made this session, any JSON values."
    )
    ttl_seconds: int | None = Field(
        None,
        ge=MIN_TTL_SECONDS,
        le=MAX_TTL_SECONDS,
        description="Lifetime after the last use; null means `working_memory.ttl_hours` "
        "(24 h by default).",
    )


class ScratchpadWrite(RequestModel):
    """The value stored under one scratchpad key."""

    value: JsonValue = Field(description="Any JSON value.")


class ScratchpadEntry(ResponseModel):
    key: str
    value: Any


class WorkingMemoryOut(ResponseModel):
    agent_id: str
    session_id: str
    active_context: dict[str, Any]
    scratchpad: dict[str, Any]
    retrieved_memory_ids: list[uuid.UUID]
    decisions: list[Any]
    ttl_seconds: int = Field(description="Lifetime after the last use.")
    version: int = Field(description="How many writes the record has seen (1 when created).")
    etag: str = Field(
        description="The record's entity tag, also sent in the ETag header; "
        "send it back in If-Match to write only over this version."
    )
    created_at: IsoDatetime
    updated_at: IsoDatetime = Field(description="Time of the last write.")
    expires_at: IsoDatetime = Field(description="Moves forward on every read and write.")
