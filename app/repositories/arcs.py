"""arcs: insert, lookups, event append, close, search legs, and the episodes' time line."""

import json
import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, cast, func, literal, select, text, update
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.ext.asyncio import AsyncSession

from app.models import Arc, Episode
from app.repositories import pagination
from app.repositories.filters import equal_values
from app.repositories.memories import search_columns
from app.repositories.memory_filters import compile_filter
from app.repositories.rows import update_stamped
from app.repositories.search.record_tables import RecordQuery
from app.schemas.filters import MemoryFilter


def _filtered(
    tenant_id: str, scope: str | None, arc_type: str | None, status: str | None
) -> list[ColumnElement[bool]]:
    return [
        Arc.tenant_id == tenant_id,
        *equal_values(Arc, scope=scope, arc_type=arc_type, status=status),
    ]


async def list_arcs(
    session: AsyncSession,
    *,
    tenant_id: str,
    scope: str | None,
    arc_type: str | None,
    status: str | None,
    limit: int,
    cursor: str | None,
    memory_filter: MemoryFilter | None = None,
) -> tuple[list[Arc], str | None]:
    """A page of the tenant's arcs, newest first, those `memory_filter` admits."""
    stmt = select(Arc).where(
        *_filtered(tenant_id, scope, arc_type, status), *compile_filter("arc", memory_filter)
    )
    return await pagination.list_page(
        session, stmt, order=(Arc.created_at, Arc.id), limit=limit, cursor=cursor
    )


async def append_event(
    session: AsyncSession, *, tenant_id: str, arc_id: uuid.UUID, event: dict[str, Any]
) -> Arc:
    """Append one key event in a single UPDATE (key_events || [event])."""
    stmt = (
        update(Arc)
        .where(Arc.tenant_id == tenant_id, Arc.id == arc_id)
        .values(
            key_events=Arc.key_events.op("||")(
                func.jsonb_build_array(cast(literal(json.dumps(event)), JSONB))
            ),
            updated_at=func.now(),
        )
        .returning(Arc)
        .execution_options(synchronize_session=False, populate_existing=True)
    )
    return (await session.execute(stmt)).scalar_one()


async def update_arc(
    session: AsyncSession,
    *,
    tenant_id: str,
    arc_id: uuid.UUID,
    values: dict[str, Any],
    search_text: str | None = None,
) -> Arc:
    """Apply `values` (and a new tsvector when `search_text` is given) to one arc."""
    if search_text is not None:
        values = {**values, **(await search_columns(search_text))}
    return await update_stamped(session, Arc, tenant_id=tenant_id, row_id=arc_id, values=values)


def search_query(
    *, tenant_id: str, scope: str | None, arc_type: str | None, status: str | None
) -> RecordQuery:
    """An arc search keeping the tenant's arcs of this scope, type and status (None: any)."""
    return RecordQuery(Arc, "arc", tenant_id, _filtered(tenant_id, scope, arc_type, status))


async def episode_times(
    session: AsyncSession, *, tenant_id: str, butler: str
) -> list[tuple[uuid.UUID, datetime, str]]:
    """(id, occurred_at, content) of the butler's live episodes, in time order."""
    stmt = (
        select(Episode.id, Episode.occurred_at, Episode.content)
        .where(
            Episode.tenant_id == tenant_id,
            Episode.butler == butler,
            (Episode.expires_at.is_(None)) | (Episode.expires_at > func.now()),
        )
        .order_by(Episode.occurred_at, Episode.sequence)
    )
    return [(row.id, row.occurred_at, row.content) for row in await session.execute(stmt)]


async def overlapping_arc_exists(
    session: AsyncSession, *, tenant_id: str, scope: str, start: datetime, end: datetime
) -> bool:
    """True when an arc of the scope (not abandoned) overlaps [start, end]."""
    stmt = text(
        "SELECT EXISTS (SELECT 1 FROM arcs WHERE tenant_id = :t AND scope = :s "
        "AND status <> 'abandoned' AND started_at <= :end "
        "AND coalesce(ended_at, 'infinity') >= :start)"
    )
    return bool(
        (
            await session.execute(stmt, {"t": tenant_id, "s": scope, "start": start, "end": end})
        ).scalar_one()
    )
