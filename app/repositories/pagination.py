"""Keyset pagination, newest first, with opaque cursors: the one helper every listing uses."""

import base64
import json
import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Select, tuple_
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import InstrumentedAttribute

from app.core.errors import InvalidInput

# A page is ordered by (created_at, *uuid keys) descending; the cursor holds the last row's
# values of those columns.
OrderKey = Sequence[InstrumentedAttribute[Any]]


def encode_cursor(created_at: datetime, *ids: uuid.UUID) -> str:
    """An opaque cursor pointing just after the row with these order values."""
    raw = json.dumps([created_at.isoformat(), *(str(row_id) for row_id in ids)]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str, *, id_count: int = 1) -> tuple[Any, ...]:
    """Parse a cursor made by `encode_cursor`; a bad one is a 422 on `cursor`."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        created_at, *ids = json.loads(base64.urlsafe_b64decode(padded.encode()))
        if len(ids) != id_count:
            raise ValueError("wrong number of keys")
        return (datetime.fromisoformat(created_at), *(uuid.UUID(row_id) for row_id in ids))
    except (ValueError, TypeError, json.JSONDecodeError, UnicodeDecodeError):
        raise InvalidInput("cursor is not a cursor returned by this API", field="cursor") from None


async def list_page(
    session: AsyncSession, stmt: Select[Any], *, order: OrderKey, limit: int, cursor: str | None
) -> tuple[list[Any], str | None]:
    """One page of `stmt`'s rows ordered by `order` descending, and the next page's cursor.

    `order` is (created_at, id) for most tables; the first column must be a timestamp, the
    others UUIDs that make the order total.
    """
    if cursor:
        stmt = stmt.where(tuple_(*order) < tuple_(*decode_cursor(cursor, id_count=len(order) - 1)))
    stmt = stmt.order_by(*(column.desc() for column in order)).limit(limit + 1)
    rows = list((await session.execute(stmt)).scalars())
    if len(rows) <= limit:
        return rows, None
    page = rows[:limit]
    last = page[-1]
    return page, encode_cursor(*(getattr(last, column.key) for column in order))
