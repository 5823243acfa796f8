"""What the data-rights tools answer: a hard delete's receipt and a page of an export."""

import uuid
from typing import Any, Literal

from pydantic import Field

from app.schemas.common import RequestModel, ResponseModel

MAX_EXPORT_PAGE = 1000


class DeletedOut(ResponseModel):
    """A hard delete done: what was deleted, counted per table."""

    type: Literal["episode", "fact", "rule", "entity", "run"]
    id: uuid.UUID
    deleted: dict[str, int] = Field(description="Rows deleted (or facts detached) per table.")


class ExportPageRequest(RequestModel):
    """Which records of the export to return."""

    limit: int = Field(500, ge=1, le=MAX_EXPORT_PAGE, description="Records in the page.")
    cursor: str | None = Field(
        None, pattern=r"^[0-9]{1,12}$", description="`next_cursor` of the previous page."
    )


class ExportPageOut(ResponseModel):
    """Records of `GET /v1/export`, in its order, one JSON object each."""

    records: list[dict[str, Any]]
    next_cursor: str | None = Field(
        description="Pass back as `cursor` for the next page; null after the last record."
    )
