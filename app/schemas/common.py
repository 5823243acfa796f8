"""Shared request/response building blocks: bounded strings, metadata, pages."""

import json
import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any, Generic, Literal, TypeVar

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    Strict,
)

from app.core.constants import MAX_SESSION_ID_CHARS
from app.core.text import is_blank

MAX_CONTENT_CHARS = 50_000
MAX_NAME_CHARS = 200
MAX_TAGS = 50
MAX_METADATA_BYTES = 16 * 1024
MAX_METADATA_DEPTH = 8
# A client document the service stores without reading (working memory).
MAX_DOCUMENT_BYTES = 64 * 1024
# Keys the service once kept its own state under; the state now lives in columns, and a
# client sending one of them gets a 422 so nobody believes it still steers anything.
RESERVED_METADATA_KEYS = (
    "forgotten",
    "needs_inversion",
    "status",
    "harmful_reasons",
    "original_content",
    "merged_into",
)

MemoryType = Literal["episode", "fact", "rule"]
# What a provenance link may join: the memories, and the records of runs and agent ledgers.
LinkEndType = Literal[
    "episode",
    "fact",
    "rule",
    "run",
    "run_message",
    "run_feedback",
    "agent_event",
    "entity",
    "procedure",
    "arc",
]
Permanence = Literal["permanent", "stable", "standard", "volatile", "ephemeral"]
Validity = Literal["active", "superseded", "expired", "retracted"]
MaturityLevel = Literal["candidate", "established", "proven", "anti_pattern"]
ConsolidationStatus = Literal["pending", "consolidated", "failed"]


def drop_nul(value: Any) -> Any:
    """A string without its NUL characters, which PostgreSQL text cannot hold; else as is."""
    return value.replace("\x00", "") if isinstance(value, str) else value


# Stored text: NUL characters are dropped before the length and blank checks.
NoNul = BeforeValidator(drop_nul)


def _not_blank(value: str) -> str:
    if is_blank(value):
        raise ValueError(
            "must not be blank (after Unicode normalisation, without zero-width "
            "and other invisible characters)"
        )
    return value


def json_depth(value: Any, depth: int = 0) -> int:
    """How many levels of objects and arrays `value` nests."""
    if isinstance(value, dict):
        return max((json_depth(v, depth + 1) for v in value.values()), default=depth + 1)
    if isinstance(value, list):
        return max((json_depth(v, depth + 1) for v in value), default=depth + 1)
    return depth


def bounded_json(max_bytes: int) -> Callable[[Any], Any]:
    """A validator: the value serialises to at most `max_bytes`, nests at most
    MAX_METADATA_DEPTH levels and holds no NUL character."""

    def check(value: Any) -> Any:
        encoded = json.dumps(value, ensure_ascii=False)
        if len(encoded.encode("utf-8")) > max_bytes:
            raise ValueError(f"must serialise to at most {max_bytes} bytes of JSON")
        if "\\u0000" in encoded:
            raise ValueError("must not contain NUL (\\u0000) characters")
        if json_depth(value) > MAX_METADATA_DEPTH:
            raise ValueError(f"must not nest deeper than {MAX_METADATA_DEPTH} levels")
        return value

    return check


def _no_reserved_keys(value: dict[str, Any]) -> dict[str, Any]:
    reserved = sorted(key for key in value if key in RESERVED_METADATA_KEYS)
    if reserved:
        raise ValueError(
            f"reserved key(s) {', '.join(reserved)}: lifecycle state is kept by "
            "the service, not in metadata"
        )
    return value


Content = Annotated[
    str,
    Field(min_length=1, max_length=MAX_CONTENT_CHARS),
    NoNul,
    AfterValidator(_not_blank),
]
Name = Annotated[
    str,
    Field(min_length=1, max_length=MAX_NAME_CHARS),
    NoNul,
    AfterValidator(_not_blank),
]
Language = Annotated[
    str,
    Field(
        min_length=2,
        max_length=35,
        pattern=r"^[A-Za-z]{2,20}([-_][A-Za-z0-9]{1,8})*$",
        description="The language of the text, as an ISO 639-1 code (`de`, `pt-BR`) or a "
        "PostgreSQL text search configuration (`german`); detected when omitted. A "
        "language without a stemmer is read word for word (docs/search.md).",
    ),
]
# Agent frameworks name sessions with their own ids (UUIDs, thread ids, "chat-42").
SessionIdIn = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_SESSION_ID_CHARS,
        description="The session: any string up to 200 characters (a UUID, a thread id).",
    ),
    NoNul,
    AfterValidator(_not_blank),
]
Reason = Annotated[str, Field(min_length=1, max_length=2000), NoNul, AfterValidator(_not_blank)]
Tag = Annotated[str, Field(min_length=1, max_length=100), NoNul, AfterValidator(_not_blank)]
Tags = Annotated[list[Tag], Field(max_length=MAX_TAGS)]
Metadata = Annotated[dict[str, Any], AfterValidator(bounded_json(MAX_METADATA_BYTES))]
# The metadata of facts, rules and entities: no reserved keys.
MemoryMetadata = Annotated[Metadata, AfterValidator(_no_reserved_keys)]
# The metadata a client gives a fact or a rule.
ClientMetadata = Annotated[
    MemoryMetadata,
    Field(
        description="The client's own; the keys forgotten, needs_inversion, status, "
        "harmful_reasons, original_content and merged_into are reserved (422)."
    ),
]
Importance = Annotated[float, Field(ge=0.0, le=10.0, strict=True)]
UUIDIn = Annotated[uuid.UUID, Strict(False)]


def _iso_string(value: Any) -> Any:
    # Lax datetime parsing would take a JSON number as seconds since 1970; the schema says
    # string (format date-time), so a number is refused.
    if not isinstance(value, str | datetime):
        raise ValueError("must be an ISO 8601 date-time string with a time zone")
    return value


# An ISO 8601 string with a time zone (JSON has no datetime type, hence not strict).
AwareDatetimeIn = Annotated[AwareDatetime, Strict(False), BeforeValidator(_iso_string)]
IsoDatetime = Annotated[datetime, PlainSerializer(lambda d: d.isoformat(), return_type=str)]


class RequestModel(BaseModel):
    """Base of request bodies: unknown fields are an error, and types are never coerced.

    Strict, so `true` is not a number and `0` is not a boolean; UUIDs arrive as JSON
    strings, hence `UUIDIn` for every UUID and `AwareDatetimeIn` for every time of a request.
    """

    model_config = ConfigDict(extra="forbid", strict=True)


class MemoryRef(RequestModel):
    """An episode, fact or rule of the tenant."""

    memory_type: MemoryType
    memory_id: UUIDIn


class ResponseModel(BaseModel):
    """Base of response bodies, readable from ORM rows."""

    model_config = ConfigDict(from_attributes=True, populate_by_name=True)


T = TypeVar("T")


class Page(BaseModel, Generic[T]):
    """One page of a listing; pass `next_cursor` back as `cursor` for the next one."""

    items: list[T]
    next_cursor: str | None = Field(
        None, description="Opaque cursor of the next page; null on the last page."
    )
