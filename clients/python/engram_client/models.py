"""Typed views of Engram's answers; unknown fields are kept, so newer servers still parse."""

import uuid
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Model(BaseModel):
    """Base of every answer model: extra fields allowed and kept."""

    model_config = ConfigDict(extra="allow")


class Episode(Model):
    id: uuid.UUID
    butler: str
    content: str
    session_id: str | uuid.UUID | None = None
    occurred_at: datetime | None = None
    created_at: datetime


class Fact(Model):
    id: uuid.UUID
    subject: str
    predicate: str
    content: str
    scope: str
    validity: str
    confidence: float


class Rule(Model):
    id: uuid.UUID
    content: str
    scope: str
    maturity: str


class SearchHit(Model):
    memory_type: str
    id: uuid.UUID
    content: str | None = None
    similarity: float | None = None
    rrf_score: float | None = None
    fused_score: float | None = None


class SearchResult(Model):
    mode: str
    results: list[SearchHit]


class RecallHit(Model):
    memory_type: str
    id: uuid.UUID
    content: str | None = None
    composite_score: float


class RecallResult(Model):
    results: list[RecallHit]


class ContextBlock(Model):
    """The `# Memory Context` block; `warning` is set when the service could not be reached
    and the block is empty (fail-open)."""

    context: str
    token_budget: int | None = None
    characters: int = 0
    items: list[dict[str, Any]] = Field(default_factory=list)
    warning: str | None = None


class Job(Model):
    id: uuid.UUID
    kind: str
    status: str
    result: dict[str, Any] | None = None
    errors: list[str] = Field(default_factory=list)
