"""The export read a page at a time, for callers that cannot take a stream (MCP tools)."""

import json
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Any, cast

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.services import butler_limits
from app.services.portability import export_lines


async def export_page(
    sessionmaker: async_sessionmaker[AsyncSession], *, tenant_id: str, offset: int, limit: int
) -> tuple[list[dict[str, Any]], int | None]:
    """Records `offset` to `offset + limit` of the tenant's export, as `GET /v1/export`
    writes them, and the offset of the next page (None after the last record).

    Each page is read from a snapshot of its own: for one consistent copy of a tenant that
    changes meanwhile, stream `GET /v1/export`.
    """
    butler_limits.check_unlimited("the export of the whole tenant")
    records: list[dict[str, Any]] = []
    # Closed on the way out, so a page that stops early gives its snapshot's connection back.
    stream = cast(AsyncGenerator[bytes, None], export_lines(sessionmaker, tenant_id=tenant_id))
    async with aclosing(stream) as lines:
        position = 0
        async for line in lines:
            if position >= offset + limit:
                return records, position
            if position >= offset:
                records.append(json.loads(line))
            position += 1
    return records, None
