"""Narrative arcs: create, append an event, close with outcome and lessons, search."""

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.core.clock import now_utc
from app.core.config import ArcSettings
from app.core.errors import Conflict, InvalidInput, found
from app.core.scope import side_session
from app.core.text import preprocess_text
from app.embedding import Embedder
from app.models import Arc
from app.repositories import arcs as arc_rows
from app.repositories import entities as entity_rows
from app.repositories import links as link_rows
from app.repositories import rows as record_rows
from app.retrieval.records import RecordHit, search_records
from app.retrieval.searcher import Searcher
from app.schemas.arcs import (
    MAX_KEY_EVENTS,
    ArcClose,
    ArcCreate,
    ArcEventCreate,
    ArcListQuery,
    ArcSearchRequest,
    ArcUpdate,
)
from app.schemas.filters import MemoryFilter
from app.services import butler_limits, events
from app.services.embeddings import embed_texts

OPEN_STATUSES = ("draft", "active")


def search_text(title: str, summary: str, outcome: str | None, lessons: list[str]) -> str:
    """The text an arc is embedded and keyword-indexed by."""
    return preprocess_text(" ".join([f"{title}.", summary, outcome or "", *lessons]))


def _event(event_type: str, tenant_id: str, row: Arc, **payload: Any) -> events.Event:
    return events.Event(
        event_type, tenant_id, {"arc_id": str(row.id), "scope": row.scope, **payload}
    )


async def _key_event(
    session: AsyncSession, tenant_id: str, item: ArcEventCreate, field: str
) -> dict[str, Any]:
    if not await link_rows.memory_exists(
        session, tenant_id=tenant_id, memory_type=item.memory_type, memory_id=item.memory_id
    ):
        raise InvalidInput(f"{item.memory_type} {item.memory_id} does not exist", field=field)
    return {
        "memory_type": item.memory_type,
        "memory_id": str(item.memory_id),
        "description": item.description,
        "occurred_at": (item.occurred_at or now_utc()).isoformat(),
    }


def _check_type(arcs: ArcSettings, arc_type: str) -> None:
    if arc_type not in arcs.types:
        raise InvalidInput(f"arc_type must be one of {', '.join(arcs.types)}", field="arc_type")


async def _check_entities(
    session: AsyncSession, tenant_id: str, entity_ids: list[uuid.UUID]
) -> None:
    for index, entity_id in enumerate(entity_ids):
        if await entity_rows.get(session, tenant_id=tenant_id, entity_id=entity_id) is None:
            raise InvalidInput(f"entity {entity_id} does not exist", field=f"entity_ids.{index}")


async def create_arc(
    session: AsyncSession, *, tenant_id: str, embedder: Embedder, arcs: ArcSettings, data: ArcCreate
) -> Arc:
    """Store an arc; its type must be configured, its entities and events the tenant's."""
    butler_limits.check_butler(data.scope, "scope")
    _check_type(arcs, data.arc_type)
    text = search_text(data.title, data.summary, None, [])
    embedded = await embed_texts(session, embedder, [text], tenant_id=tenant_id)
    await _check_entities(session, tenant_id, data.entity_ids)
    key_events = [
        await _key_event(session, tenant_id, item, f"key_events.{index}.memory_id")
        for index, item in enumerate(data.key_events)
    ]
    row = await record_rows.insert_searchable(
        session,
        Arc,
        search_text=text,
        values={
            "tenant_id": tenant_id,
            "scope": data.scope,
            "title": data.title,
            "summary": data.summary,
            "arc_type": data.arc_type,
            "entity_ids": list(dict.fromkeys(data.entity_ids)),
            "started_at": data.started_at or now_utc(),
            "key_events": key_events,
            "status": data.status,
            **embedded.columns(0),
        },
    )
    await events.record(session, [_event("arc_created", tenant_id, row)])
    return row


async def get_arc(session: AsyncSession, *, tenant_id: str, arc_id: uuid.UUID) -> Arc:
    """The tenant's arc; NotFound otherwise."""
    row = await record_rows.one_of_tenant(session, Arc, tenant_id=tenant_id, row_id=arc_id)
    return found(row, f"arc {arc_id} not found")


async def list_arcs(
    session: AsyncSession,
    *,
    tenant_id: str,
    query: ArcListQuery,
    memory_filter: MemoryFilter | None = None,
) -> tuple[list[Arc], str | None]:
    """A page of the tenant's arcs, newest first."""
    return await arc_rows.list_arcs(
        session,
        tenant_id=tenant_id,
        scope=query.scope,
        arc_type=query.arc_type,
        status=query.status,
        limit=query.limit,
        cursor=query.cursor,
        memory_filter=memory_filter,
    )


async def _lock_open(session: AsyncSession, tenant_id: str, arc_id: uuid.UUID) -> Arc:
    row = await record_rows.one_of_tenant(
        session, Arc, tenant_id=tenant_id, row_id=arc_id, for_update=True
    )
    row = found(row, f"arc {arc_id} not found")
    butler_limits.check_butler(row.scope, "scope")
    if row.status not in OPEN_STATUSES:
        raise Conflict(f"arc {arc_id} is {row.status}; a closed arc takes no more changes")
    return row


async def append_event(
    session: AsyncSession, *, tenant_id: str, arc_id: uuid.UUID, data: ArcEventCreate
) -> Arc:
    """Append a key event to an open arc (Conflict once it is closed or full)."""
    row = await _lock_open(session, tenant_id, arc_id)
    if len(row.key_events) >= MAX_KEY_EVENTS:
        raise Conflict(f"arc {arc_id} already holds {MAX_KEY_EVENTS} key events")
    event = await _key_event(session, tenant_id, data, "memory_id")
    return await arc_rows.append_event(session, tenant_id=tenant_id, arc_id=row.id, event=event)


async def update_arc(
    session: AsyncSession,
    *,
    tenant_id: str,
    embedder: Embedder,
    arcs: ArcSettings,
    arc_id: uuid.UUID,
    data: ArcUpdate,
) -> Arc:
    """Change an open arc's title, summary, type, entities, start or draft/active status."""
    changes = data.model_dump(exclude_unset=True)
    if None in changes.values():
        field = next(name for name, value in changes.items() if value is None)
        raise InvalidInput(f"{field} cannot be null", field=field)
    if "arc_type" in changes:
        _check_type(arcs, changes["arc_type"])
    async with side_session(session) as lookup:
        current = await get_arc(lookup, tenant_id=tenant_id, arc_id=arc_id)
    text = None
    if {"title", "summary"} & changes.keys():
        text = search_text(
            changes.get("title", current.title),
            changes.get("summary", current.summary),
            current.outcome,
            current.lessons,
        )
        embedded = await embed_texts(session, embedder, [text], tenant_id=tenant_id)
        changes |= embedded.columns(0)
    if "entity_ids" in changes:
        await _check_entities(session, tenant_id, changes["entity_ids"])
        changes["entity_ids"] = list(dict.fromkeys(changes["entity_ids"]))
    row = await _lock_open(session, tenant_id, arc_id)
    if not changes:
        return row
    updated = await arc_rows.update_arc(
        session, tenant_id=tenant_id, arc_id=row.id, search_text=text, values=changes
    )
    await events.record(
        session, [_event("arc_updated", tenant_id, updated, fields=sorted(data.model_fields_set))]
    )
    return updated


async def close_arc(
    session: AsyncSession, *, tenant_id: str, embedder: Embedder, arc_id: uuid.UUID, data: ArcClose
) -> Arc:
    """Close an open arc with its outcome and lessons; re-embedded so search finds them."""
    ended_at: datetime = data.ended_at or now_utc()
    async with side_session(session) as lookup:
        current = await get_arc(lookup, tenant_id=tenant_id, arc_id=arc_id)
    text = search_text(current.title, current.summary, data.outcome, data.lessons)
    embedded = await embed_texts(session, embedder, [text], tenant_id=tenant_id)
    row = await _lock_open(session, tenant_id, arc_id)
    if ended_at < row.started_at:
        raise InvalidInput("ended_at is before the arc's started_at", field="ended_at")
    closed = await arc_rows.update_arc(
        session,
        tenant_id=tenant_id,
        arc_id=row.id,
        search_text=text,
        values={
            "status": data.status,
            "outcome": data.outcome,
            "lessons": data.lessons,
            "ended_at": ended_at,
            **embedded.columns(0),
        },
    )
    await events.record(session, [_event("arc_closed", tenant_id, closed, status=data.status)])
    return closed


async def search_arcs(
    session: AsyncSession,
    *,
    searcher: Searcher,
    request: ArcSearchRequest,
) -> list[RecordHit]:
    """Semantic and keyword legs fused as memories are (the configured fusion), or one leg alone."""
    tenant_id, embedder, retrieval = searcher.tenant_id, searcher.embedder, searcher.retrieval
    query = arc_rows.search_query(
        tenant_id=tenant_id, scope=request.scope, arc_type=request.arc_type, status=request.status
    )
    return await search_records(
        session,
        embedder=embedder,
        retrieval=retrieval,
        record_query=query,
        text=request.query,
        mode=request.mode,
        limit=request.limit,
    )
