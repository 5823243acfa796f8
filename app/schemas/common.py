"""Shared request/response building blocks: bounded strings, metadata, pages."""

import json
import uuid
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

MAX_CONTENT_CHARS = 50_000
MAX_NAME_CHARS = 200
MAX_TAGS = 50
MAX_METADATA_BYTES = 16 * 1024
MAX_METADATA_DEPTH = 8

MemoryType = Literal["episode", "fact", "rule"]
Permanence = Literal["permanent", "stable", "standard", "volatile", "ephemeral"]
Validity = Literal["active", "superseded", "expired", "retracted"]
MaturityLevel = Literal["candidate", "established", "proven", "anti_pattern"]
ConsolidationStatus = Literal["pending", "consolidated", "failed"]


def _no_nul(value: str) -> str:
    if "\x00" in value:
        raise ValueError("must not contain NUL (\\x00) characters")
    return value


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be blank")
    return value


def _json_depth(value: Any, depth: int = 0) -> int:
    if isinstance(value, dict):
        return max((_json_depth(v, depth + 1) for v in value.values()), default=depth + 1)
    if isinstance(value, list):
        return max((_json_depth(v, depth + 1) for v in value), default=depth + 1)
    return depth


def _bounded_metadata(value: dict[str, Any]) -> dict[str, Any]:
    encoded = json.dumps(value, ensure_ascii=False)
    if len(encoded.encode("utf-8")) > MAX_METADATA_BYTES:
        raise ValueError(f"must serialise to at most {MAX_METADATA_BYTES} bytes of JSON")
    if "\\u0000" in encoded:
        raise ValueError("must not contain NUL (\\u0000) characters")
    if _json_depth(value) > MAX_METADATA_DEPTH:
        raise ValueError(f"must not nest deeper than {MAX_METADATA_DEPTH} levels")
    return value


Content = Annotated[
    str,
    Field(min_length=1, max_length=MAX_CONTENT_CHARS),
    AfterValidator(_no_nul),
    AfterValidator(_not_blank),
]
Name = Annotated[
    str,
    Field(min_length=1, max_length=MAX_NAME_CHARS),
    AfterValidator(_no_nul),
    AfterValidator(_not_blank),
]
Reason = Annotated[str, Field(max_length=2000), AfterValidator(_no_nul)]
Tag = Annotated[str, Field(min_length=1, max_length=100), AfterValidator(_no_nul)]
Tags = Annotated[list[Tag], Field(max_length=MAX_TAGS)]
Metadata = Annotated[dict[str, Any], AfterValidator(_bounded_metadata)]
Importance = Annotated[float, Field(ge=0.0, le=10.0, strict=True)]
UUIDIn = Annotated[uuid.UUID, Strict(False)]


def _not_a_number(value: Any) -> Any:
    # Lax datetime parsing would read a JSON number as a Unix timestamp.
    if isinstance(value, int | float):
        raise ValueError("must be an ISO 8601 date-time string with a time zone, not a number")
    return value


# An ISO 8601 string with a time zone (JSON has no datetime type, hence not strict).
AwareDatetimeIn = Annotated[AwareDatetime, Strict(False), BeforeValidator(_not_a_number)]
IsoDatetime = Annotated[datetime, PlainSerializer(lambda d: d.isoformat(), return_type=str)]


class RequestModel(BaseModel):
    """Base of request bodies: unknown fields are an error, and types are never coerced.

    Strict, so `true` is not a number and `0` is not a boolean; UUIDs arrive as JSON
    strings, hence `UUIDIn` for every UUID and `AwareDatetimeIn` for every time of a request.
    """

    model_config = ConfigDict(extra="forbid", strict=True)


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
