"""Keyset pagination on (created_at DESC, id DESC) with opaque cursors."""

import base64
import json
import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import Select, and_, or_

from app.errors import InvalidInput


def encode_cursor(created_at: datetime, row_id: uuid.UUID) -> str:
    """An opaque cursor pointing just after this row."""
    raw = json.dumps([created_at.isoformat(), str(row_id)]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, uuid.UUID]:
    """Parse a cursor made by `encode_cursor`; a bad one is a 422 on `cursor`."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        created_at, row_id = json.loads(base64.urlsafe_b64decode(padded.encode()))
        return datetime.fromisoformat(created_at), uuid.UUID(row_id)
    except (ValueError, TypeError, json.JSONDecodeError, UnicodeDecodeError):
        raise InvalidInput("cursor is not a cursor returned by this API", field="cursor") from None


def paginate(stmt: Select[Any], model: Any, *, limit: int, cursor: str | None) -> Select[Any]:
    """Order newest first and start after `cursor`; fetches one extra row to detect a next page."""
    if cursor:
        created_at, row_id = decode_cursor(cursor)
        stmt = stmt.where(
            or_(
                model.created_at < created_at,
                and_(model.created_at == created_at, model.id < row_id),
            )
        )
    return stmt.order_by(model.created_at.desc(), model.id.desc()).limit(limit + 1)


def split_page(rows: list[Any], limit: int) -> tuple[list[Any], str | None]:
    """Cut the extra row off and return the cursor of the next page, if any."""
    if len(rows) <= limit:
        return rows, None
    page = rows[:limit]
    last = page[-1]
    return page, encode_cursor(last.created_at, last.id)
