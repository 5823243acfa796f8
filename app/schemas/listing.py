"""A listing's query parameters: their base model and the types they share."""

from typing import Annotated, Any

from pydantic import AwareDatetime, BaseModel, BeforeValidator, Field

from app.schemas.common import MAX_NAME_CHARS

MAX_PAGE_SIZE = 200
MAX_CURSOR_CHARS = 512


class ListQuery(BaseModel):
    """Base of a listing's query parameters: read from a query string, so values are parsed
    from text (the app refuses parameters no route declares)."""


PageLimit = Annotated[int, Field(ge=1, le=MAX_PAGE_SIZE, description="Page size (1-200).")]
PageCursor = Annotated[
    str | None,
    Field(max_length=MAX_CURSOR_CHARS, description="`next_cursor` of the previous page."),
]
# A listing's text parameter: an exact value to match.
ListText = Annotated[str | None, Field(min_length=1, max_length=MAX_NAME_CHARS)]


def _not_a_number(value: Any) -> Any:
    # Lax parsing would read "0.5" as seconds since 1970; the schema says date-time.
    try:
        float(value)
    except (TypeError, ValueError):
        return value
    raise ValueError("must be an ISO 8601 date-time with a time zone, not a number")


# A time in a query string: ISO 8601 with a time zone, never a number.
IsoTime = Annotated[AwareDatetime, BeforeValidator(_not_a_number)]
