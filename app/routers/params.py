"""Query parameters shared by the listing routes."""

import json
from collections.abc import Callable
from typing import Annotated

from fastapi import Depends, Query

from app.core.errors import InvalidInput
from app.schemas.filters import (
    FILTER_DESCRIPTION,
    MemoryFilter,
    parse_filter,
    record_filter_description,
)
from app.schemas.listing import IsoTime, ListText, PageCursor, PageLimit

# Paging and text parameters of routes without a query model: the query models' own types.
Limit = Annotated[PageLimit, Query()]
Cursor = Annotated[PageCursor, Query()]
Text = Annotated[ListText, Query()]
MAX_FILTER_QUERY_CHARS = 8000


def _parsed_filter(filter: str | None, record_type: str | None) -> MemoryFilter | None:
    if filter is None:
        return None
    try:
        return parse_filter(json.loads(filter), record_type)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"filter: not valid JSON ({exc.msg})", field="query.filter") from None
    except ValueError as exc:
        raise InvalidInput(str(exc), field="query.filter") from None


def _memory_filter(
    filter: Annotated[
        str | None,
        Query(
            max_length=MAX_FILTER_QUERY_CHARS,
            description="A filter as JSON text (URL-encoded), in the language of `filter` in "
            "POST /v1/search:\n\n" + FILTER_DESCRIPTION,
        ),
    ] = None,
) -> MemoryFilter | None:
    return _parsed_filter(filter, None)


def _record_filter(record_type: str) -> Callable[..., MemoryFilter | None]:
    """The `filter` query parameter of the list of `record_type` records, parsed."""

    def parse(
        filter: Annotated[
            str | None,
            Query(
                max_length=MAX_FILTER_QUERY_CHARS,
                description="A filter as JSON text (URL-encoded), in the language of `filter` in "
                "POST /v1/search:\n\n" + record_filter_description(record_type),
            ),
        ] = None,
    ) -> MemoryFilter | None:
        return _parsed_filter(filter, record_type)

    return parse


# The `filter` query parameter of a memory listing, parsed.
FilterQuery = Annotated[MemoryFilter | None, Depends(_memory_filter)]
# The same of the lists of entities, runs, procedures and arcs: only their own fields.
EntityFilterQuery = Annotated[MemoryFilter | None, Depends(_record_filter("entity"))]
RunFilterQuery = Annotated[MemoryFilter | None, Depends(_record_filter("run"))]
ProcedureFilterQuery = Annotated[MemoryFilter | None, Depends(_record_filter("procedure"))]
ArcFilterQuery = Annotated[MemoryFilter | None, Depends(_record_filter("arc"))]
LinkFilterQuery = Annotated[MemoryFilter | None, Depends(_record_filter("link"))]

AsOf = Annotated[
    IsoTime | None,
    Query(description="Valid time: the fact versions that held at this moment (default: now)."),
]
KnownAt = Annotated[
    IsoTime | None,
    Query(description="Record time: as Engram believed them at this moment (default: now)."),
]
