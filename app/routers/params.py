"""Query parameters shared by the listing routes."""

from typing import Annotated

from fastapi import Query

Limit = Annotated[int, Query(ge=1, le=200, description="Page size (1-200).")]
Cursor = Annotated[
    str | None,
    Query(max_length=512, description="`next_cursor` of the previous page."),
]
Text = Annotated[str | None, Query(min_length=1, max_length=200)]
