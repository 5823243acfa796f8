"""Aggregate counts of the memory tables, one statement per table."""

from typing import Any

from sqlalchemy import Float, and_, cast, extract, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from app.core.constants import SECONDS_PER_HOUR
from app.models import Episode, Fact, Rule
from app.repositories import consolidation as consolidation_rows


async def episode_counts(
    session: AsyncSession, *, tenant_id: str, butler: str | None
) -> dict[str, Any]:
    """total, unconsolidated, failed, next_retry_at, backlog_age_hours,
    oldest_unconsolidated_at and expired_unconsolidated of the tenant's (butler's) episodes."""
    pending = Episode.consolidation_status == "pending"
    failed = and_(Episode.consolidation_status == "failed", Episode.forgotten_at.is_(None))
    oldest = func.min(Episode.created_at).filter(pending)
    expired_unconsolidated = and_(
        ~Episode.consolidated, Episode.forgotten_at.is_(None), Episode.expires_at < func.now()
    )
    stmt = select(
        func.count().label("total"),
        func.count().filter(pending).label("unconsolidated"),
        func.count().filter(failed).label("failed"),
        func.min(Episode.next_attempt_at).filter(failed).label("next_retry_at"),
        func.coalesce(
            func.greatest(0.0, cast(extract("epoch", func.now() - oldest), Float)),
            0.0,
        ).label("backlog_seconds"),
        oldest.label("oldest"),
        func.count().filter(expired_unconsolidated).label("expired_unconsolidated"),
    ).where(Episode.tenant_id == tenant_id)
    if butler is not None:
        stmt = stmt.where(Episode.butler == butler)
    row = (await session.execute(stmt)).one()
    return {
        "total": row.total,
        "unconsolidated": row.unconsolidated,
        "failed": row.failed,
        "next_retry_at": row.next_retry_at,
        "backlog_age_hours": row.backlog_seconds / SECONDS_PER_HOUR,
        "oldest_unconsolidated_at": row.oldest,
        "expired_unconsolidated": row.expired_unconsolidated,
    }


async def awaiting_consolidation(session: AsyncSession) -> dict[str, int]:
    """Episodes of every tenant not consolidated nor forgotten, by consolidation status
    (pending, failed)."""
    stmt = (
        select(Episode.consolidation_status, func.count())
        .where(*consolidation_rows.awaiting())
        .group_by(Episode.consolidation_status)
    )
    return {status: int(count) for status, count in await session.execute(stmt)}


async def fact_counts(
    session: AsyncSession, *, tenant_id: str, scope: str | None
) -> dict[str, int]:
    """Facts by validity, active ones split into active and fading."""
    fading = Fact.fading_since.is_not(None)
    active = Fact.validity == "active"
    stmt = select(
        func.count().filter(active, ~fading).label("active"),
        func.count().filter(active, fading).label("fading"),
        func.count().filter(Fact.validity == "superseded").label("superseded"),
        func.count().filter(Fact.validity == "expired").label("expired"),
        func.count().filter(Fact.validity == "retracted").label("retracted"),
    ).where(Fact.tenant_id == tenant_id)
    if scope is not None:
        stmt = stmt.where(Fact.scope.in_(["global", scope]))
    return dict((await session.execute(stmt)).one()._mapping)


async def rule_counts(
    session: AsyncSession, *, tenant_id: str, scope: str | None
) -> dict[str, int]:
    """Live rules by maturity, and forgotten rules."""
    forgotten = Rule.forgotten_at.is_not(None)
    stmt = select(
        *(
            func.count().filter(Rule.maturity == level, ~forgotten).label(level)
            for level in ("candidate", "established", "proven", "anti_pattern")
        ),
        func.count().filter(forgotten).label("forgotten"),
    ).where(Rule.tenant_id == tenant_id)
    if scope is not None:
        stmt = stmt.where(Rule.scope.in_(["global", scope]))
    return dict((await session.execute(stmt)).one()._mapping)
