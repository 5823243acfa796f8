"""Query parameters shared by the listing routes."""

from typing import Annotated, Any

from fastapi import Query
from pydantic import AwareDatetime, BeforeValidator

Limit = Annotated[int, Query(ge=1, le=200, description="Page size (1-200).")]
Cursor = Annotated[
    str | None,
    Query(max_length=512, description="`next_cursor` of the previous page."),
]
Text = Annotated[str | None, Query(min_length=1, max_length=200)]



def _not_a_number(value: Any) -> Any:
    # Lax parsing would read "0.5" as seconds since 1970; the schema says date-time.
    try:
        float(value)
    except (TypeError, ValueError):
        return value
    raise ValueError("must be an ISO 8601 date-time with a time zone, not a number")


# A time in a query string: ISO 8601 with a time zone, never a number.
IsoTime = Annotated[AwareDatetime, BeforeValidator(_not_a_number)]
AsOf = Annotated[IsoTime | None, Query(
    description="Valid time: the fact versions that held at this moment (default: now).")]
KnownAt = Annotated[IsoTime | None, Query(
    description="Record time: as Engram believed them at this moment (default: now).")]
