"""The append-only audit stream and rule applications."""

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import and_, insert, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from app.models import MemoryEvent, RuleApplication
from app.repositories import pagination
from app.repositories.filters import equal


async def add_events(session: AsyncSession, rows: list[dict[str, Any]]) -> None:
    """Append many memory_events rows in multi-row statements."""
    if rows:
        # RETURNING makes SQLAlchemy send the rows as multi-row statements, not one per row.
        await session.execute(insert(MemoryEvent).returning(MemoryEvent.id), rows)


async def add_rule_application(
    session: AsyncSession,
    *,
    tenant_id: str,
    rule_id: uuid.UUID,
    outcome: str,
    reason: str | None,
    context: dict[str, Any],
) -> None:
    """Record one helpful/harmful application of a rule."""
    await session.execute(
        insert(RuleApplication).values(
            tenant_id=tenant_id, rule_id=rule_id, outcome=outcome, reason=reason, context=context
        )
    )


async def harmful_reasons(
    session: AsyncSession, *, tenant_id: str, rule_ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, list[str]]:
    """The non-empty reasons of each rule's harmful marks, oldest first (rules without any
    are left out)."""
    if not rule_ids:
        return {}
    stmt = (
        select(RuleApplication.rule_id, RuleApplication.reason)
        .where(
            RuleApplication.tenant_id == tenant_id,
            RuleApplication.rule_id.in_(list(rule_ids)),
            RuleApplication.outcome == "harmful",
            RuleApplication.reason.is_not(None),
            RuleApplication.reason != "",
        )
        .order_by(RuleApplication.created_at, RuleApplication.id)
    )
    found: dict[uuid.UUID, list[str]] = {}
    for rule_id, reason in (await session.execute(stmt)).all():
        if reason:
            found.setdefault(rule_id, []).append(reason)
    return found


@dataclass(frozen=True)
class EventFilters:
    """What an event listing keeps; None means any."""

    memory_id: uuid.UUID | None = None
    event_type: str | None = None
    since: datetime | None = None
    until: datetime | None = None


# Tombstones name the memories they deleted in a list rather than in memory_id.
_TOMBSTONES_WITH_LISTS = ("fact_deleted", "entity_deleted", "memories_erased")


async def list_events(
    session: AsyncSession, *, tenant_id: str, filters: EventFilters, limit: int, cursor: str | None
) -> tuple[list[MemoryEvent], str | None]:
    """A page of the tenant's events matching `filters`, newest first."""
    stmt = select(MemoryEvent).where(MemoryEvent.tenant_id == tenant_id)
    if filters.memory_id is not None:
        memory_id = str(filters.memory_id)
        stmt = stmt.where(
            or_(
                MemoryEvent.payload["memory_id"].astext == memory_id,
                and_(
                    MemoryEvent.event_type.in_(_TOMBSTONES_WITH_LISTS),
                    or_(
                        MemoryEvent.payload["memory_ids"].has_key(memory_id),
                        MemoryEvent.payload["deleted_ids"].has_key(memory_id),
                    ),
                ),
            )
        )
    stmt = stmt.where(*equal(MemoryEvent, filters, "event_type"))
    if filters.since is not None:
        stmt = stmt.where(MemoryEvent.created_at >= filters.since)
    if filters.until is not None:
        stmt = stmt.where(MemoryEvent.created_at < filters.until)
    return await pagination.list_page(
        session, stmt, order=(MemoryEvent.created_at, MemoryEvent.id), limit=limit, cursor=cursor
    )
